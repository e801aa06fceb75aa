"""Cleaning throughput per core on the sample corpus, side by side with datatrove's filters.

    python -m benchmarks.bench_clean [--datatrove-python PATH]

Measures, on the same documents in one run:
  1. tokenmill's quality rules alone (Gopher repetition, Gopher quality, C4, FineWeb, word diversity);
  2. tokenmill's whole cleaning transform (plus normalization with ftfy, language id, PII);
  3. the Spark job in local[2] (reading, cleaning, writing Parquet), divided by 2 cores, twice;
  4. datatrove's Gopher, C4 and FineWeb filters in one process (its own venv; created under
     .bench/ when --datatrove-python is not given).
Prints a Markdown table of documents/s and MB/s per core and the ratio to datatrove.
"""

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.peer_venv import peer_python
from prep.clean import CleanConfig, clean_texts
from prep.ingest.inputs import single_source
from tests.prep.clean_reference import sample_texts

REPO = Path(__file__).resolve().parent.parent


def datatrove_python(given: str | None) -> str:
    # spacy: its English word tokenizer; xxhash 4 refuses the str datatrove's MinHash passes it.
    return peer_python("datatrove-venv", ["datatrove>=0.4", "spacy", "tokenizers", "xxhash<4", "regex", "orjson"],
                       given)


def time_rules_only(texts: list[str]) -> float:
    from prep.quality.c4 import c4
    from prep.quality.fineweb import fineweb
    from prep.quality.gopher_quality import gopher_quality
    from prep.quality.gopher_repetition import gopher_repetition
    from prep.quality.word_diversity import word_diversity

    rules = CleanConfig().en
    for text in texts[:20]:  # the compiled kernels and the character table outside the timing, as below
        gopher_repetition(text, rules.gopher_repetition, False)
        gopher_quality(text, rules.gopher_quality, False)
    started = time.perf_counter()
    for text in texts:
        _ = (gopher_repetition(text, rules.gopher_repetition, False)
             or gopher_quality(text, rules.gopher_quality, False)
             or c4(text, rules.c4, False)[1] or fineweb(text, rules.fineweb, False)
             or word_diversity(text, rules.word_diversity, False))
    return time.perf_counter() - started


def time_clean_text(texts: list[str]) -> float:
    """The whole transform as the job runs it: clean_texts over batches of 10,000 (Spark's Arrow batches)."""
    cfg = CleanConfig()
    clean_texts(texts[:20], cfg)  # loads the language model and the compiled kernels outside the timing
    started = time.perf_counter()
    for at in range(0, len(texts), 10_000):
        clean_texts(texts[at:at + 10_000], cfg)
    return time.perf_counter() - started


def time_spark_job() -> tuple[float, float]:
    """(first run, second run) of the job in one local[2] session: the first pays for starting the
    Python workers and loading the language model in each, the second is the steady state."""
    from spark_stages import clean
    from spark_stages.session import get_spark

    spark = get_spark("bench-clean", ["spark.master=local[2]"])
    files, times = single_source(str(REPO / "data" / "sample")), []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            clean.run(spark, files, clean.Config(), out)
            times.append(time.perf_counter() - started)
    spark.stop()
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datatrove-python", help="a Python that has datatrove and spacy installed")
    args = parser.parse_args()
    texts = sample_texts()
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
    try:
        script = str(REPO / "benchmarks" / "datatrove_filters.py")
        out = subprocess.run([datatrove_python(args.datatrove_python), script,
                              f.name], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    datatrove = json.loads(out.strip().splitlines()[-1])["seconds"]
    # The one-process figures before Spark starts: its JVM lives on in this process after the session stops.
    rules, transform = time_rules_only(texts), time_clean_text(texts)
    spark_cold, spark_warm = time_spark_job()
    rows = [
        ("datatrove Gopher + C4 + FineWeb filters, 1 process", datatrove, 1),
        ("tokenmill quality rules, 1 process", rules, 1),
        ("tokenmill clean transform (rules + ftfy + lang id + PII), 1 process", transform, 1),
        ("tokenmill Spark job, local[2], first run (read, clean, write Parquet)", spark_cold, 2),
        ("tokenmill Spark job, local[2], second run in the same session", spark_warm, 2),
    ]
    print(f"{len(texts)} documents, {megabytes:.1f} MB of text (the sample corpus)\n")
    print("| what | seconds | docs/s per core | MB/s per core | vs datatrove |")
    print("|---|---|---|---|---|")
    base = len(texts) / datatrove
    for name, seconds, cores in rows:
        rate = len(texts) / seconds / cores
        print(f"| {name} | {seconds:.1f} | {rate:.0f} | {megabytes / seconds / cores:.2f} | {rate / base:.2f}x |")


if __name__ == "__main__":
    main()
