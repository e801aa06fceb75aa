"""Whether a benchmark the loop evaluates on was cut from its training data: the warning at start.

The pipeline records beside each shards folder it wrote the benchmarks it decontaminated against, with
their files' checksums (SHARDS/decontamination.json, schemas/decontamination.py). A benchmark file counts
as cut from a source when the source's record lists a file of the same checksum (the same bytes, whatever
its name); otherwise, or when a source has no record (made without decontamination, or by another
tool), the loop warns: the benchmark's accuracy may measure memorization.
"""

import hashlib

from schemas.decontamination import RECORD_FILE, RecordError, read_record
from schemas.trust import open_regular_file


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open_regular_file(path) as f:  # (a FIFO's open waited forever)
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def record_of(source) -> dict | str:
    """A shards folder's record (loaders' ShardSource, local or remote), or why there is none."""
    where = f"{source.location}/{RECORD_FILE}"
    try:
        with (source.fs.open(f"{source.root}/{RECORD_FILE}", "rb") if source.remote
              else open_regular_file(source.local / RECORD_FILE)) as file:  # (a FIFO hung rank 0)
            return read_record(file)
    except FileNotFoundError:
        return f"{where} is missing (shards made without decontamination, or by another tool)"
    except (OSError, RecordError) as e:
        return f"{where} cannot be used: {e}"


def warnings(benchmarks: dict[str, list[str]], sources: dict[str, object]) -> list[str]:
    """A line per benchmark not cut from a training source: `benchmarks` {NAME: files}, `sources` {NAME:
    ShardSource}."""
    records = {name: record_of(source) for name, source in sources.items()}
    lines = []
    for benchmark, files in benchmarks.items():
        sums = {path: file_sha256(path) for path in files}
        for source, record in records.items():
            if isinstance(record, str):
                lines.append(f"benchmark {benchmark}: not known to be cut from the training data: {record}")
                continue
            cut = {sha for entries in record.values() for _, _, sha in entries}
            if missing := [path for path, sha in sums.items() if sha not in cut]:
                more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
                lines.append(f"benchmark {benchmark}: {missing[0]}{more} not cut from the training data of source "
                             f"{source} (decontaminated against {', '.join(record) or 'nothing'}: other files)")
    return lines
