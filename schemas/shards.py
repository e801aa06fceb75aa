"""Token shards: the Arrow schema of a row, the files' checksums and their checks against the index
(whose model is schemas/index.py).

A shard is an Arrow IPC *file* (random access), zstd-compressed, named shard-00000.arrow, ...
Each row is one training sequence:
  tokens      list<uint32>  token ids; length a multiple of 128, at most seq_len; padding (pad_id)
                            only after the last document boundary
  cu_seqlens  list<int32>   cumulative document boundaries in the row: 0, end of the first piece,
                            ..., number of real tokens (FlashAttention varlen style)

"""

import mmap
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import xxhash

if TYPE_CHECKING:
    from schemas.index import ShardEntry

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


def round_up(n: int) -> int:
    """n rounded up to a multiple of ROW_MULTIPLE."""
    return -(-n // ROW_MULTIPLE) * ROW_MULTIPLE


class ShardFileError(ValueError):
    """What is wrong with a shard file (the caller adds which file)."""


def open_shard(path: Path, entry: "ShardEntry", algorithm: str = CHECKSUM_ALGORITHM) -> pa.Table:
    """The shard's rows, after checking the file against its index entry: present, size, checksum,
    readable Arrow IPC, schema, row count. Raises ShardFileError saying what is wrong."""
    check_shard_file(path, entry, algorithm)
    return read_checked_shard(path, entry)


def read_checked_shard(path: Path, entry: "ShardEntry") -> pa.Table:
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
    if table.num_rows != entry.rows:
        raise ShardFileError(f"{table.num_rows} rows, index says {entry.rows}")
    return table


def check_shard_file(path: Path, entry: "ShardEntry", algorithm: str = CHECKSUM_ALGORITHM) -> None:
    """Present, of the indexed size and checksum; else ShardFileError."""
    mapped = checked_shard_mapping(path, entry, algorithm)
    if mapped is not None:
        mapped.close()


def checked_shard_mapping(path: Path, entry: "ShardEntry", algorithm: str = CHECKSUM_ALGORITHM) -> mmap.mmap | None:
    """check_shard_file, returning the file's read-only mapping it checked (None for an empty file), so
    that a reader goes on from the bytes it checked instead of mapping the file again. Close it."""
    if not path.is_file():  # (a link is followed, to a regular file only, as open_regular_file follows it)
        raise ShardFileError("not a regular file (a FIFO, a device or a folder is not read)" if path.exists()
                             else "missing")
    if path.stat().st_size != entry.bytes:
        raise ShardFileError(f"size {path.stat().st_size} bytes, index says {entry.bytes} (truncated?)")
    mapped = _mapped(path)
    try:
        checksum = buffer_checksum(mapped if mapped is not None else b"", algorithm)
        if checksum != entry.checksum:
            raise ShardFileError(f"checksum mismatch: {checksum}, index says {entry.checksum} (corrupt)")
    except BaseException:  # a refused file is not left mapped for as long as the error is held
        if mapped is not None:
            mapped.close()
        raise
    return mapped
