"""Job outputs that appear whole or not at all.

A job writes into OUT/_staging/ and, once everything is written, moves each output into place and
writes stats.json last. A rerun after a failure starts from an empty staging folder, so no partial
or duplicate output survives. Spark's part files are renamed part-00000.parquet, … in partition
order, so the same input gives the same file names.
"""

import json
import os
import shutil
from pathlib import Path


def staging_dir(out: str) -> Path:
    staging = Path(out) / "_staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def _rename_parts(folder: Path) -> None:
    parts = sorted(p for p in folder.iterdir() if p.name.startswith("part-"))
    for index, part in enumerate(parts):
        part.rename(folder / f"part-{index:05d}.parquet")
    for checksum in folder.glob(".*crc"):
        checksum.unlink()


def commit(staging: Path, out: str, names: list[str], stats: dict, marker: str = "stats.json") -> None:
    """Moves the outputs in place; `marker` (the stats) is written last and marks a complete output."""
    out_path = Path(out)
    (out_path / marker).unlink(missing_ok=True)
    for name in names:
        _rename_parts(staging / name)
        target = out_path / name
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging / name, target)
    for extra in staging.iterdir():  # reports written beside the data
        os.replace(extra, out_path / extra.name)
    staging.rmdir()
    tmp = out_path / f"{marker}.tmp"
    tmp.write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, out_path / marker)
