"""Labelled sets built from the sample corpus's real text, and the scores of tokenmill on them: the
quality tests check the bars, benchmarks/ prints the tables (and adds the other tools)."""
