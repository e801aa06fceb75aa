"""Token shards: the Arrow schema of a row and the layout of SHARDS/index.json.

A shard is an Arrow IPC *file* (random access), zstd-compressed, named shard-00000.arrow, ...
Each row is one training sequence:
  tokens      list<uint32>  token ids; length a multiple of 128, at most seq_len; padding (pad_id)
                            only after the last document boundary
  cu_seqlens  list<int32>   cumulative document boundaries in the row: 0, end of the first piece,
                            ..., number of real tokens (FlashAttention varlen style)

index.json (INDEX_VERSION):
  format_version, tokenizer_sha256, vocab_size, embedding_size (vocab_size rounded up to a multiple
  of 128), seq_len, pad_id, bos_id, eos_id, compression ("zstd"), compression_level,
  checksum_algorithm ("xxh3-128"), shards: [{file, rows, tokens, real_tokens, bytes, checksum,
  batch_rows (rows per Arrow record batch; optional: without it a first batch waits for whole shards)}],
  totals: {shards, rows, tokens, real_tokens, bytes, documents, padding_waste}
"""

import mmap
import os
from pathlib import Path

import pyarrow as pa
import xxhash

from schemas.trust import plain_file_name

INDEX_VERSION = "1"
INDEX_FILE = "index.json"
# xxh3 hashes at ~7 GB/s a core here, BLAKE2b at ~0.5: the loader checks every shard before its first
# row is served, so the checksum is on the path to the first batch. Shards are guarded against
# corruption, not tampering.
CHECKSUM_ALGORITHM = "xxh3-128"
CHECKSUM_ALGORITHMS = {"xxh3-128": xxhash.xxh3_128}
# Row lengths and the embedding size are multiples of this (tensor-core and kernel friendly).
ROW_MULTIPLE = 128

SHARD_SCHEMA = pa.schema([
    pa.field("tokens", pa.list_(pa.uint32()), nullable=False),
    pa.field("cu_seqlens", pa.list_(pa.int32()), nullable=False),
])

INDEX_KEYS = ("format_version", "tokenizer_sha256", "vocab_size", "embedding_size", "seq_len", "pad_id", "bos_id",
              "eos_id", "compression", "compression_level", "checksum_algorithm", "shards", "totals")
SHARD_KEYS = ("file", "rows", "tokens", "real_tokens", "bytes", "checksum")
TOTAL_KEYS = ("shards", "rows", "tokens", "real_tokens", "bytes", "documents", "padding_waste")


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
    if index["checksum_algorithm"] not in CHECKSUM_ALGORITHMS:
        problems.append(f"checksum_algorithm must be one of {', '.join(CHECKSUM_ALGORITHMS)}")
    vocab, embedding, seq_len = index["vocab_size"], index["embedding_size"], index["seq_len"]
    if not (_count(vocab) and vocab > 0 and _count(embedding) and embedding >= vocab and embedding % ROW_MULTIPLE == 0):
        problems.append(f"vocab_size {vocab!r} and embedding_size {embedding!r} must be positive integers, the "
                        f"embedding size at least the vocabulary and a multiple of {ROW_MULTIPLE}")
        return problems
    if not (_count(seq_len) and seq_len > 0 and seq_len % ROW_MULTIPLE == 0):
        problems.append(f"seq_len {seq_len!r} must be a positive multiple of {ROW_MULTIPLE}")
        return problems
    problems += [f"{key} {index[key]!r} is not an id below vocab_size {vocab}" for key in ("pad_id", "bos_id", "eos_id")
                 if not (_count(index[key]) and index[key] < vocab)]
    if not isinstance(index["totals"], dict):
        problems.append("totals must be an object")
    if not isinstance(index["shards"], list):
        return problems + ["shards must be a list of shard entries"]
    names = set()
    for number, entry in enumerate(index["shards"]):
        found = _entry_problems(entry)
        found = found or [f"{entry['file']}: {p}" for p in (entry_count_problems(entry, seq_len) if counts else [])]
        problems += [f"shards[{number}]: {p}" for p in found]
        if isinstance(entry, dict) and entry.get("file") in names:
            problems.append(f"shards[{number}]: file {entry['file']!r} is listed twice")
        names.add(entry.get("file") if isinstance(entry, dict) else None)
    return problems


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
    if batch_rows is not None and not (isinstance(batch_rows, list) and all(_count(b) and b > 0 for b in batch_rows)
                                       and sum(batch_rows) == rows):
        problems.append(f"batch_rows must be positive counts adding up to its {rows} rows")
    return problems


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.arrow"


def file_checksum(path: Path, algorithm: str = CHECKSUM_ALGORITHM) -> str:
    """The index's checksum of a file (hex), by one of CHECKSUM_ALGORITHMS."""
    mapped = _mapped(path)
    try:
        return buffer_checksum(mapped if mapped is not None else b"", algorithm)
    finally:
        if mapped is not None:
            mapped.close()


def buffer_checksum(data, algorithm: str = CHECKSUM_ALGORITHM) -> str:
    """file_checksum of bytes already in memory or mapped."""
    if algorithm not in CHECKSUM_ALGORITHMS:
        raise ShardFileError(f"unknown checksum algorithm {algorithm!r} (known: {', '.join(CHECKSUM_ALGORITHMS)})")
    digest = CHECKSUM_ALGORITHMS[algorithm]()
    digest.update(data)
    return digest.hexdigest()


def _mapped(path: Path) -> mmap.mmap | None:
    """The file mapped read-only (hashed and read where it lies: a read would copy it first, 3x the
    time), None when empty (nothing to map)."""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else None


def new_index(shards: list[dict], *, tokenizer_sha256: str, vocab_size: int, seq_len: int, pad_id: int, bos_id: int,
              eos_id: int, compression_level: int, documents: int, quarantined: int = 0) -> dict:
    """index.json's content for shard entries {file, rows, tokens, real_tokens, bytes, checksum}, in order."""
    totals = {key: sum(s[key] for s in shards) for key in ("rows", "tokens", "real_tokens", "bytes")}
    totals.update(shards=len(shards), documents=documents, quarantined=quarantined,
                  padding_waste=round(1 - totals["real_tokens"] / totals["tokens"], 6) if totals["tokens"] else 0.0,
                  bytes_per_token=round(totals["bytes"] / totals["tokens"], 4) if totals["tokens"] else 0.0)
    return {"format_version": INDEX_VERSION, "tokenizer_sha256": tokenizer_sha256, "vocab_size": vocab_size,
            "embedding_size": round_up(vocab_size), "seq_len": seq_len, "pad_id": pad_id, "bos_id": bos_id,
            "eos_id": eos_id, "compression": "zstd", "compression_level": compression_level,
            "checksum_algorithm": CHECKSUM_ALGORITHM, "shards": shards, "totals": totals}


def round_up(n: int) -> int:
    """n rounded up to a multiple of ROW_MULTIPLE."""
    return -(-n // ROW_MULTIPLE) * ROW_MULTIPLE


class ShardFileError(ValueError):
    """What is wrong with a shard file (the caller adds which file)."""


def open_shard(path: Path, entry: dict, algorithm: str = CHECKSUM_ALGORITHM) -> pa.Table:
    """The shard's rows, after checking the file against its index entry: present, size, checksum,
    readable Arrow IPC, schema, row count. Raises ShardFileError saying what is wrong."""
    check_shard_file(path, entry, algorithm)
    return read_checked_shard(path, entry)


def read_checked_shard(path: Path, entry: dict) -> pa.Table:
    """The rows of a shard whose bytes check_shard_file passed: readable Arrow IPC of the shard schema
    and the indexed row count, else ShardFileError."""
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
        table.validate(full=True)  # list offsets inside their values: readers index by them
    except (pa.ArrowInvalid, OSError) as e:
        raise ShardFileError(f"not a readable Arrow IPC file: {e}") from None
    if not table.schema.equals(SHARD_SCHEMA):
        raise ShardFileError(f"schema {table.schema} is not the shard schema")
    if table.num_rows != entry["rows"]:
        raise ShardFileError(f"{table.num_rows} rows, index says {entry['rows']}")
    return table


def check_shard_file(path: Path, entry: dict, algorithm: str = CHECKSUM_ALGORITHM) -> None:
    """Present, of the indexed size and checksum; else ShardFileError."""
    mapped = checked_shard_mapping(path, entry, algorithm)
    if mapped is not None:
        mapped.close()


def checked_shard_mapping(path: Path, entry: dict, algorithm: str = CHECKSUM_ALGORITHM) -> mmap.mmap | None:
    """check_shard_file, returning the file's read-only mapping it checked (None for an empty file), so
    that a reader goes on from the bytes it checked instead of mapping the file again. Close it."""
    if not path.is_file():
        raise ShardFileError("missing")
    if path.stat().st_size != entry["bytes"]:
        raise ShardFileError(f"size {path.stat().st_size} bytes, index says {entry['bytes']} (truncated?)")
    mapped = _mapped(path)
    try:
        checksum = buffer_checksum(mapped if mapped is not None else b"", algorithm)
        if checksum != entry["checksum"]:
            raise ShardFileError(f"checksum mismatch: {checksum}, index says {entry['checksum']} (corrupt)")
    except BaseException:  # a refused file is not left mapped for as long as the error is held
        if mapped is not None:
            mapped.close()
        raise
    return mapped
