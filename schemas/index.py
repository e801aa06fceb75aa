"""SHARDS/index.json: its model (ShardIndex, ShardEntry, IndexTotals), read and written here alone, and
the checks an index from elsewhere passes before any of its names is opened or its numbers size anything.

index.json (INDEX_VERSION):
  format_version, tokenizer_sha256, vocab_size, embedding_size (vocab_size rounded up to a multiple
  of 128), seq_len, pad_id, bos_id, eos_id, compression ("zstd"), compression_level,
  checksum_algorithm ("xxh3-128"), shards: [{file, rows, tokens, real_tokens, bytes, checksum,
  batch_rows (rows per Arrow record batch; optional: without it a first batch waits for whole shards)}],
  totals: {shards, rows, tokens, real_tokens, bytes, documents, quarantined, padding_waste,
  bytes_per_token}, and quarantine_checksum when the shards job quarantined records.

An index from elsewhere is read with its size capped and its numbers bounded (read_index_json): an
integer past an int64 is no count, so the checks below refuse it by name.
"""

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

from schemas.shards import CHECKSUM_ALGORITHM, CHECKSUM_ALGORITHMS, ROW_MULTIPLE, round_up
from schemas.trust import bounded_json, plain_file_name, read_up_to

INDEX_VERSION = "1"
INDEX_FILE = "index.json"
# A shard's entry is a few hundred bytes: 64 MiB lists ~150,000 shards, tens of petabytes of them.
MAX_INDEX_BYTES = 64 << 20
# Sizes a loader or a model allocates by: bounded before they are used (a batch is seq_len tokens a row; an
# embedding vocab_size rows). Far past what is trained today (1M-token contexts, 256K-piece vocabularies).
MAX_SEQ_LEN = 1 << 22
MAX_VOCAB_SIZE = 1 << 24


class IndexProblem(ValueError):
    """An index.json that cannot be used; the message says why."""


@dataclass(frozen=True)
class ShardEntry:
    file: str  # a plain file name beside index.json
    rows: int
    tokens: int  # every row's tokens, padding included
    real_tokens: int
    bytes: int  # of the file
    checksum: str  # of the file, by the index's checksum_algorithm
    batch_rows: tuple[int, ...] | None = None  # rows per Arrow record batch


@dataclass(frozen=True)
class IndexTotals:
    shards: int
    rows: int
    tokens: int
    real_tokens: int
    bytes: int
    documents: int
    padding_waste: float
    quarantined: int = 0
    bytes_per_token: float = 0.0


@dataclass(frozen=True)
class ShardIndex:
    tokenizer_sha256: str
    vocab_size: int
    embedding_size: int  # vocab_size rounded up to a multiple of 128
    seq_len: int
    pad_id: int
    bos_id: int
    eos_id: int
    compression_level: int
    shards: tuple[ShardEntry, ...]
    totals: IndexTotals
    checksum_algorithm: str = CHECKSUM_ALGORITHM
    compression: str = "zstd"
    format_version: str = INDEX_VERSION
    quarantine_checksum: str | None = None  # of the shards job's quarantine output, when it has one

    @classmethod
    def from_json(cls, data, counts: bool = True) -> "ShardIndex":
        """The index of index.json's content; IndexProblem with the first problems (index_problems; the
        validator, which checks each shard's counts against its file, reads it without `counts`)."""
        if problems := index_problems(data, counts):
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise IndexProblem("; ".join(problems[:3]) + more)
        fields = {f.name for f in dataclasses.fields(cls)}
        entries = tuple(ShardEntry(**{k: e[k] for k in SHARD_KEYS},
                                   batch_rows=tuple(e["batch_rows"]) if e.get("batch_rows") is not None else None)
                        for e in data["shards"])
        totals = IndexTotals(**{k: data["totals"][k] for k in TOTAL_FIELDS if k in data["totals"]})
        return cls(**{k: v for k, v in data.items() if k in fields and k not in ("shards", "totals")},
                   shards=entries, totals=totals)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["shards"] = list(data["shards"])  # as JSON reads back: lists
        for entry in data["shards"]:
            if entry["batch_rows"] is None:
                del entry["batch_rows"]
            else:
                entry["batch_rows"] = list(entry["batch_rows"])
        if data["quarantine_checksum"] is None:
            del data["quarantine_checksum"]
        return data

    def write(self, folder: Path) -> None:
        (folder / INDEX_FILE).write_text(json.dumps(self.to_json()) + "\n", encoding="utf-8")


TOTAL_FIELDS = tuple(f.name for f in dataclasses.fields(IndexTotals))


def read_index_json(file) -> object:
    """index.json's content from an open binary file (local or fsspec's): read no further than
    MAX_INDEX_BYTES + 1 (trust.TooLarge past it), numbers bounded (trust.bounded_json)."""
    data = read_up_to(file, MAX_INDEX_BYTES + 1)
    if data[:2] == b"\x1f\x8b":  # gzip's magic: a web server that compressed it though asked for no encoding
        raise ValueError("gzip-compressed (sent compressed by a web server that was asked for no encoding, or "
                         "compressed by hand)")
    return bounded_json(data, MAX_INDEX_BYTES)


def new_index(shards: list[ShardEntry], *, tokenizer_sha256: str, vocab_size: int, seq_len: int, pad_id: int,
              bos_id: int, eos_id: int, compression_level: int, documents: int, quarantined: int = 0,
              quarantine_checksum: str | None = None) -> ShardIndex:
    """The index of shard entries, in order, with their totals."""
    rows, tokens = sum(s.rows for s in shards), sum(s.tokens for s in shards)
    real, size = sum(s.real_tokens for s in shards), sum(s.bytes for s in shards)
    totals = IndexTotals(shards=len(shards), rows=rows, tokens=tokens, real_tokens=real, bytes=size,
                         documents=documents, quarantined=quarantined,
                         padding_waste=round(1 - real / tokens, 6) if tokens else 0.0,
                         bytes_per_token=round(size / tokens, 4) if tokens else 0.0)
    return ShardIndex(tokenizer_sha256=tokenizer_sha256, vocab_size=vocab_size, embedding_size=round_up(vocab_size),
                      seq_len=seq_len, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id, compression_level=compression_level,
                      shards=tuple(shards), totals=totals, quarantine_checksum=quarantine_checksum)


INDEX_KEYS = ("format_version", "tokenizer_sha256", "vocab_size", "embedding_size", "seq_len", "pad_id", "bos_id",
              "eos_id", "compression", "compression_level", "checksum_algorithm", "shards", "totals")
SHARD_KEYS = ("file", "rows", "tokens", "real_tokens", "bytes", "checksum")  # required: ShardEntry's but batch_rows
TOTAL_KEYS = ("shards", "rows", "tokens", "real_tokens", "bytes", "documents", "padding_waste")  # required
TOTAL_COUNTS = ("shards", "rows", "tokens", "real_tokens", "bytes", "documents", "quarantined")


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def index_problems(index, counts: bool = True) -> list[str]:
    """What makes an index.json unusable, before any of its numbers sizes anything or any of its names
    is opened: keys, version, algorithm, the special ids and sizes, and each shard's entry (a plain file
    name, counts of the right types and, with `counts`, that agree with each other and with seq_len:
    entry_count_problems). Empty when it can be read."""
    if not isinstance(index, dict):
        return [f"index.json holds a JSON {type(index).__name__}, not an object"]
    if missing := [k for k in INDEX_KEYS if k not in index]:
        return [f"keys missing: {', '.join(missing)}"]
    if index["format_version"] != INDEX_VERSION:
        return [f"format_version {index['format_version']!r}, this tokenmill reads {INDEX_VERSION!r}"]
    problems = []
    if not isinstance(index["checksum_algorithm"], str) or index["checksum_algorithm"] not in CHECKSUM_ALGORITHMS:
        problems.append(f"checksum_algorithm must be one of {', '.join(CHECKSUM_ALGORITHMS)}")
    problems += _described_problems(index)
    vocab, embedding, seq_len = index["vocab_size"], index["embedding_size"], index["seq_len"]
    if not (_count(vocab) and 0 < vocab <= MAX_VOCAB_SIZE):
        problems.append(f"vocab_size {vocab!r} must be a positive integer up to {MAX_VOCAB_SIZE}")
        return problems
    if not _count(embedding) or embedding != round_up(vocab):
        problems.append(f"embedding_size {embedding!r} must be vocab_size rounded up to a multiple of {ROW_MULTIPLE} "
                        f"({round_up(vocab)})")
        return problems
    if not (_count(seq_len) and 0 < seq_len <= MAX_SEQ_LEN and seq_len % ROW_MULTIPLE == 0):
        problems.append(f"seq_len {seq_len!r} must be a positive multiple of {ROW_MULTIPLE} up to {MAX_SEQ_LEN}")
        return problems
    problems += [f"{key} {index[key]!r} is not an id below vocab_size {vocab}" for key in ("pad_id", "bos_id", "eos_id")
                 if not (_count(index[key]) and index[key] < vocab)]
    totals = index["totals"]
    if not isinstance(totals, dict) or not all(k in totals for k in TOTAL_KEYS) or not all(
            _count(totals[k]) if k in TOTAL_COUNTS else _finite(totals[k]) for k in TOTAL_FIELDS if k in totals):
        problems.append(f"totals must be an object of counts ({', '.join(TOTAL_COUNTS)}) and finite "
                        f"numbers ({', '.join(k for k in TOTAL_FIELDS if k not in TOTAL_COUNTS)})")
    if not isinstance(index["shards"], list):
        return problems + ["shards must be a list of shard entries"]
    names = set()
    for number, entry in enumerate(index["shards"]):
        found = _entry_problems(entry)
        found = found or [f"{entry['file']}: {p}" for p in (entry_count_problems(entry, seq_len) if counts else [])]
        problems += [f"shards[{number}]: {p}" for p in found]
        file = entry.get("file") if isinstance(entry, dict) else None
        if isinstance(file, str) and file in names:  # a name, not a list or object of some other kind
            problems.append(f"shards[{number}]: file {file!r} is listed twice")
        names.add(file if isinstance(file, str) else None)
    return problems


def _described_problems(index: dict) -> list[str]:
    """The fields that describe the shards and size nothing: read by the loader's start checks, logged, and
    compared across ranks, so of the types they are written with."""
    problems = []
    sha = index["tokenizer_sha256"]
    if not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
        problems.append("tokenizer_sha256 must be 64 lowercase hex digits")
    if index["compression"] != "zstd":  # the one codec the shards job writes
        problems.append("compression must be 'zstd'")
    level = index["compression_level"]
    if not (isinstance(level, int) and not isinstance(level, bool) and -(1 << 17) <= level <= 22):
        problems.append("compression_level must be a zstd level (an integer up to 22)")
    checksum = index.get("quarantine_checksum")
    if checksum is not None and not (isinstance(checksum, str) and len(checksum) <= 100):
        problems.append("quarantine_checksum must be a string")
    return problems


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _entry_problems(entry) -> list[str]:
    if not isinstance(entry, dict):
        return ["not an object"]
    if absent := [k for k in SHARD_KEYS if k not in entry]:
        return [f"lacks {', '.join(absent)}"]
    try:
        plain_file_name(entry["file"], "file")
    except ValueError as e:
        return [str(e)]
    if not all(_count(entry[k]) for k in ("rows", "tokens", "real_tokens", "bytes")) or not isinstance(
            entry["checksum"], str):
        return [f"{entry['file']}: rows, tokens, real_tokens and bytes must be counts and checksum a string"]
    batch_rows = entry.get("batch_rows")
    if batch_rows is not None and not (isinstance(batch_rows, list) and all(_count(b) and b > 0 for b in batch_rows)):
        return [f"{entry['file']}: batch_rows must be a list of positive counts"]
    return []


def entry_count_problems(entry: dict, seq_len: int) -> list[str]:
    """Whether a shard entry's counts can describe rows of seq_len (an entry _entry_problems passed)."""
    rows, tokens, real, size = entry["rows"], entry["tokens"], entry["real_tokens"], entry["bytes"]
    problems = []
    # Every row holds a multiple of 128 tokens, at most seq_len of them, and pads fewer than 128.
    if rows == 0 or tokens % ROW_MULTIPLE or not ROW_MULTIPLE * rows <= tokens <= seq_len * rows:
        problems.append(f"{tokens} tokens cannot fill {rows} rows of 128 to {seq_len} tokens each")
    elif not tokens - (ROW_MULTIPLE - 1) * rows <= real <= tokens:
        problems.append(f"{real} real tokens of {tokens} pads 128 or more tokens in a row")
    if size == 0:
        problems.append("bytes must be positive")
    batch_rows = entry.get("batch_rows")
    if batch_rows is not None and sum(batch_rows) != rows:
        problems.append(f"batch_rows must be positive counts adding up to its {rows} rows")
    return problems


