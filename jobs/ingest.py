"""Reading `--input` on Spark: one task per input file, records in READ_SCHEMA (prep/clean.py)."""

import math
import os

from jobs.spark_session import spark_schema
from prep.clean import READ_SCHEMA, read_records
from prep.inputs import InputFile
from prep.readers import ReaderConfig

MAX_INPUT_PARTITIONS = 10_000
MIN_PARTITIONS = 8  # enough to keep a few cores busy on a small input
PARTITION_BYTES = 128 << 20  # about this much (uncompressed) input per task after the read


def default_partitions(files: list[InputFile]) -> int:
    """From the input's size, never from the cores: the partitioning decides the output files."""
    estimated = sum(os.path.getsize(f.path) * (4 if f.path.endswith((".gz", ".zst")) else 1) for f in files)
    return max(MIN_PARTITIONS, math.ceil(estimated / PARTITION_BYTES))


def read_input(spark, files: list[InputFile], cfg: ReaderConfig):
    """A DataFrame in READ_SCHEMA: documents, quarantined records and file errors, with their positions."""
    # Compressed JSON Lines cannot be split, so a file is a task (up to a cap).
    listing = [(i, f.path, f.relative) for i, f in enumerate(files)]
    file_table = spark.sparkContext.parallelize(listing, min(len(listing), MAX_INPUT_PARTITIONS)).toDF(
        "file_index int, path string, relative string")

    def read_partition(batches):
        for batch in batches:
            pairs = zip(batch["file_index"].to_pylist(), batch["path"].to_pylist(), batch["relative"].to_pylist())
            yield from read_records(((i, InputFile(p, r)) for i, p, r in pairs), cfg)

    return file_table.mapInArrow(read_partition, spark_schema(READ_SCHEMA))
