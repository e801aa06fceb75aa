"""Decontamination: benchmark items found in documents (exact runs and alignment) and cut out, span by span."""
