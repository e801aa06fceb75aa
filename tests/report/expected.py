"""What a report must show, computed here from the outputs by other means than the report's (whole tables
read with pyarrow): the ids of the sample, the fates of documents."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import xxhash


def stats(folder: Path) -> dict:
    return json.loads((folder / "stats.json").read_text())


def rows(folder: Path, columns: list[str]) -> list[dict]:
    parts = sorted(folder.rglob("part-*.parquet"))
    return [row for part in parts for row in pq.read_table(part, columns=columns).to_pylist()]


def smallest_ids(ids: list[str], k: int) -> list[str]:
    """The sample: the k ids of the smallest 64-bit xxh3 hashes (a definition, written here a second time)."""
    return sorted(ids, key=lambda i: xxhash.xxh3_64_intdigest(i.encode()))[:k]


def sample_by_reason(folder: Path, k: int) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for row in rows(folder, ["id", "reason"]):
        found.setdefault(row["reason"], []).append(row["id"])
    return {reason: smallest_ids(ids, k) for reason, ids in found.items()}


def clean_fates(folder: Path) -> dict[str, str]:
    fates = {row["id"]: "kept" for row in rows(folder / "docs", ["id"])}
    fates.update({row["id"]: f"rejected: {row['reason']}" for row in rows(folder / "rejected", ["id", "reason"])})
    return fates
