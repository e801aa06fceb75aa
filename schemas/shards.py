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
  checksum_algorithm ("xxh3-128"; "blake2b-128" in shards written before it), shards: [{file, rows, tokens,
  real_tokens, bytes, checksum, batch_rows (rows per Arrow record batch; absent in older indexes)}],
  totals: {shards, rows, tokens, real_tokens, bytes, documents, padding_waste}
"""

import hashlib
import mmap
import os
from pathlib import Path

import pyarrow as pa
import xxhash

INDEX_VERSION = "1"
INDEX_FILE = "index.json"
# xxh3 hashes at ~7 GB/s a core here, BLAKE2b at ~0.5: the loader checks every shard before its first
# row is served, so the checksum is on the path to the first batch. Shards are guarded against
# corruption, not tampering. BLAKE2b is still read (shards written before xxh3 became the default).
CHECKSUM_ALGORITHM = "xxh3-128"
CHECKSUM_ALGORITHMS = {"xxh3-128": xxhash.xxh3_128, "blake2b-128": lambda: hashlib.blake2b(digest_size=16)}
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
