"""SHARDS/decontamination.json: the benchmarks a shards folder's documents were cut against, written by the
pipeline beside index.json when it ran the decontaminate stage (--benchmark NAME=PATH).

  {"format_version": "1",
   "benchmarks": {NAME: [{"file": the file's path relative to what the benchmark was given as,
                          "bytes": its size, "sha256": its checksum}, ...]}}

The training loop reads it to warn when a benchmark it evaluates on was not cut from its training data:
a benchmark file counts as cut when a file of the same checksum is listed, whatever its name. A record
from elsewhere is read within bounds (MAX_RECORD_BYTES, numbers bounded) and checked field by field.
"""

import re

from schemas.trust import RepeatedKey, TooLarge, bounded_json

RECORD_FILE = "decontamination.json"
RECORD_VERSION = "1"
MAX_RECORD_BYTES = 1 << 20  # an entry is about 150 bytes: thousands of benchmark files fit
MAX_NAME_CHARS = 200
SHA256 = re.compile(r"[0-9a-f]{64}")


class RecordError(ValueError):
    """A decontamination record that is not one: what is wrong with it."""


def new_record(benchmarks: dict[str, list[tuple[str, int, str]]]) -> dict:
    """The record of benchmarks given as {NAME: [(file, bytes, sha256), ...]}."""
    return {"format_version": RECORD_VERSION,
            "benchmarks": {name: [{"file": file, "bytes": size, "sha256": sha} for file, size, sha in files]
                           for name, files in benchmarks.items()}}


def _text(value, field: str, limit: int = MAX_NAME_CHARS) -> str:
    if not isinstance(value, str) or not value or len(value) > limit or "\x00" in value:
        raise RecordError(f"{field} must be text of 1 to {limit} characters")
    return value


def validate_record(data) -> dict[str, list[tuple[str, int, str]]]:
    """{NAME: [(file, bytes, sha256), ...]} of a record's JSON; RecordError naming the first bad field."""
    if not isinstance(data, dict) or set(data) != {"format_version", "benchmarks"}:
        raise RecordError("not a decontamination record: expected exactly format_version and benchmarks")
    if data["format_version"] != RECORD_VERSION:
        raise RecordError(f"format_version {data['format_version']!r}: this version reads {RECORD_VERSION!r}")
    if not isinstance(data["benchmarks"], dict):
        raise RecordError("benchmarks must be a mapping of names to files")
    found = {}
    for name, files in data["benchmarks"].items():
        _text(name, "a benchmark's name")
        if not isinstance(files, list) or not files:
            raise RecordError(f"benchmarks.{name} must be a non-empty list of files")
        entries = []
        for i, entry in enumerate(files):
            where = f"benchmarks.{name}[{i}]"
            if not isinstance(entry, dict) or set(entry) != {"file", "bytes", "sha256"}:
                raise RecordError(f"{where} must hold exactly file, bytes and sha256")
            size = entry["bytes"]
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise RecordError(f"{where}.bytes must be a size in bytes, got {size!r}")
            if not isinstance(entry["sha256"], str) or not SHA256.fullmatch(entry["sha256"]):
                raise RecordError(f"{where}.sha256 must be 64 lowercase hexadecimal digits")
            entries.append((_text(entry["file"], f"{where}.file", 4096), size, entry["sha256"]))
        found[name] = entries
    return found


def read_record(file) -> dict[str, list[tuple[str, int, str]]]:
    """A record from an open binary file (local or fsspec's): read no further than MAX_RECORD_BYTES + 1;
    RecordError when it is too large, not JSON or not a record."""
    try:
        data = bounded_json(file.read(MAX_RECORD_BYTES + 1), MAX_RECORD_BYTES)
    except (TooLarge, RepeatedKey) as e:
        raise RecordError(str(e)) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise RecordError(f"not JSON: {e}") from None
    return validate_record(data)
