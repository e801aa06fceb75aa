"""Job outputs that appear whole or not at all, with a checksum of their content.

A job writes into OUT/_staging/ and, once everything is written, moves each output into place and
writes stats.json last. A rerun after a failure starts from an empty staging folder, so no partial
or duplicate output survives. Intermediate files every executor must reach (checkpoints) go to
OUT/_staging/_scratch/, which is removed, never moved into place. Spark's part files are renamed
part-00000.parquet, … in partition order, so the same input gives the same file names.

What is reproducible is the rows: the same input and settings give the same rows in the same files
in the same order, on any number of cores or machines, but not the same bytes (Parquet's writer
lists each column chunk's encodings in an order that changes between JVMs). So each output's
`content_checksum` goes into stats.json, for users to compare runs.
"""

import json
import os
import shutil
from pathlib import Path

SCRATCH = "_scratch"


def staging_dir(out: str) -> Path:
    staging = Path(out) / "_staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def _rename_parts(folder: Path) -> None:
    """In the folder and its partition folders (source=NAME/)."""
    parts = sorted(p for p in folder.iterdir() if p.name.startswith("part-"))
    for index, part in enumerate(parts):
        part.rename(folder / f"part-{index:05d}.parquet")
    for checksum in folder.glob(".*crc"):
        checksum.unlink()
    for partition in folder.iterdir():
        if partition.is_dir() and "=" in partition.name:
            _rename_parts(partition)


def content_checksum(spark, folder: Path) -> str:
    """`ROWS:HASH` of a Parquet output: HASH is the sum (mod 2^64) over its rows of Spark's xxhash64 of
    the file name, the row's position in the file and every value. Equal for the same rows in the same
    order and files, whatever bytes the writer chose; computed on the executors."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    _rename_parts(folder)
    if not any(folder.rglob("part-*.parquet")):
        return "0:0000000000000000"
    frame = spark.read.parquet(str(folder))
    values = [F.to_json(F.col(f.name)) if isinstance(f.dataType, MapType) else F.col(f.name)  # maps: no hash
              for f in frame.schema.fields]
    row_hash = F.xxhash64(F.col("_metadata.file_name"), F.col("_metadata.row_index"), *values)
    rows, total = frame.agg(F.count("*"), F.sum(row_hash.cast("decimal(38,0)"))).first()
    return f"{rows}:{int(total or 0) % (1 << 64):016x}"


def checksums(spark, staging: Path, names: list[str]) -> dict[str, str]:
    return {name: content_checksum(spark, staging / name) for name in names}


def commit(staging: Path, out: str, names: list[str], stats: dict, marker: str = "stats.json") -> None:
    """Moves the outputs in place; `marker` (the stats) is written last and marks a complete output."""
    out_path = Path(out)
    (out_path / marker).unlink(missing_ok=True)
    shutil.rmtree(staging / SCRATCH, ignore_errors=True)
    for name in names:
        _rename_parts(staging / name)
        target = out_path / name
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging / name, target)
    for extra in staging.iterdir():  # reports written beside the data
        os.replace(extra, out_path / extra.name)
    shutil.rmtree(staging, ignore_errors=True)  # a straggling task of a lost executor may write late
    write_json(out_path / marker, stats)


def write_json(path: Path, data: dict) -> None:
    """Whole or not at all: written beside, then renamed over `path`."""
    tmp = path.with_name(f"{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
