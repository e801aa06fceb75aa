"""L3, the SSD decompressor: find shards (a local folder or any fsspec URL), check them and decompress
them, ahead of need in background threads (zstd and the checksum release the GIL), into L2.

Remote shards are fetched once into a local cache folder (written as NAME.part, renamed when
complete) and checked there. Every problem raises ShardError naming the shard: missing, wrong size,
checksum mismatch, unreadable Arrow, wrong schema. Never garbage, never a silent end.
"""

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from schemas.shards import INDEX_FILE, SHARD_SCHEMA, ShardFileError, check_shard_file, open_shard

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "tokenmill"  # remote shards fetched here; disk-backed L2 if needed


class ShardError(RuntimeError):
    """A shard (or the index) that cannot be used; the message names it and says why."""


def _is_url(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


class ShardSource:
    """The index and the local path of each shard of one shards folder or URL."""

    def __init__(self, location: str, cache_dir: str | None = None):
        self.location = location.rstrip("/")
        self.remote = _is_url(self.location)
        if self.remote:
            import fsspec

            self.fs, self.root = fsspec.core.url_to_fs(self.location)
            self.cache = Path(cache_dir or DEFAULT_CACHE_DIR) / "shards" / self.root.strip("/").replace("/", "_")
            self.cache.mkdir(parents=True, exist_ok=True)
        else:
            self.local = Path(self.location.removeprefix("file://"))
        self.index = self._read_index()
        self.entries = self.index["shards"]

    def _read_index(self) -> dict:
        where = f"{self.location}/{INDEX_FILE}"
        try:
            if self.remote:
                with self.fs.open(f"{self.root}/{INDEX_FILE}", "rb") as f:
                    return json.loads(f.read())
            return json.loads((self.local / INDEX_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ShardError(f"{where}: missing (not a shards folder?)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ShardError(f"{where}: not JSON: {e}") from None

    def local_path(self, shard: int) -> Path:
        """The shard on local disk (fetched into the cache first when remote)."""
        name = self.entries[shard]["file"]
        if not self.remote:
            return self.local / name
        target = self.cache / name
        if not target.exists() or target.stat().st_size != self.entries[shard]["bytes"]:
            partial = target.with_suffix(".part")
            try:
                self.fs.get(f"{self.root}/{name}", str(partial))
            except FileNotFoundError:
                raise ShardError(f"{self.location}/{name}: missing") from None
            os.replace(partial, target)
        return target


class ShardArrays(NamedTuple):
    """Rows of a shard (or of one record batch) as flat arrays: row i is tokens[token_offsets[i]:
    token_offsets[i + 1]] and its boundaries cu_seqlens[cu_offsets[i]:cu_offsets[i + 1]]. Offsets index
    into the values as they are: those of a record batch need not start at 0."""
    token_offsets: np.ndarray  # int32 out of Arrow, int64 in L2; rows + 1
    tokens: np.ndarray  # uint32
    cu_offsets: np.ndarray  # like token_offsets
    cu_seqlens: np.ndarray  # int32

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, cu_seqlens) of row i (views)."""
        return (self.tokens[self.token_offsets[i]:self.token_offsets[i + 1]],
                self.cu_seqlens[self.cu_offsets[i]:self.cu_offsets[i + 1]])

    @classmethod
    def of_batch(cls, batch: pa.RecordBatch) -> "ShardArrays":
        """Views of Arrow's buffers (no copy here; L2 copies once into shared memory)."""
        return cls(*_offsets_values(batch.column(0)), *_offsets_values(batch.column(1)))


def read_shard(source: ShardSource, shard: int) -> list[ShardArrays]:
    """Checks and decompresses one shard: its record batches' arrays."""
    entry = source.entries[shard]
    path = source.local_path(shard)
    try:
        table = open_shard(path, entry, source.index["checksum_algorithm"])
    except ShardFileError as e:
        raise ShardError(f"{source.location}/{entry['file']}: {e}") from None
    return [ShardArrays.of_batch(batch) for batch in table.to_batches()]


def _offsets_values(lists: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    return _view(lists.offsets, np.int32), _view(lists.values, SHARD_DTYPES[lists.type.value_type])


def _view(array: pa.Array, dtype) -> np.ndarray:
    """A NumPy view of a null-free primitive array (Array.to_numpy would import pandas on first use:
    ~0.5 s on the way to the first batch)."""
    itemsize = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * itemsize)


SHARD_DTYPES = {pa.uint32(): np.uint32, pa.int32(): np.int32}


class RecordBatchReader:
    """Rows read by decompressing only their Arrow record batch (~4 MB), for the first batch after a
    start or resume: it need not wait for whole shards (index entries list their batch_rows)."""

    def __init__(self, source: ShardSource):
        self.source = source
        self.files: dict[int, tuple[pa.ipc.RecordBatchFileReader, np.ndarray]] = {}
        self.batches: dict[tuple[int, int], ShardArrays] = {}

    def can_read(self, shard: int) -> bool:
        return "batch_rows" in self.source.entries[shard]

    def row(self, shard: int, row: int) -> tuple[np.ndarray, np.ndarray]:
        reader, starts = self._open(shard)
        number = int(np.searchsorted(starts, row, side="right")) - 1
        if (shard, number) not in self.batches:
            self.batches[(shard, number)] = ShardArrays.of_batch(reader.get_batch(number))
        return self.batches[(shard, number)].row(row - starts[number])

    def _open(self, shard: int):
        if shard not in self.files:
            entry = self.source.entries[shard]
            path = self.source.local_path(shard)
            try:
                check_shard_file(path, entry, self.source.index["checksum_algorithm"])
                reader = pa.ipc.open_file(pa.memory_map(str(path)))
            except ShardFileError as e:
                raise ShardError(f"{self.source.location}/{entry['file']}: {e}") from None
            except (pa.ArrowInvalid, OSError) as e:
                where = f"{self.source.location}/{entry['file']}"
                raise ShardError(f"{where}: not a readable Arrow IPC file: {e}") from None
            if not reader.schema.equals(SHARD_SCHEMA) or reader.num_record_batches != len(entry["batch_rows"]):
                raise ShardError(f"{self.source.location}/{entry['file']}: schema or record batches differ from the "
                                 "index")
            self.files[shard] = (reader, np.concatenate([[0], np.cumsum(entry["batch_rows"])]))
        return self.files[shard]

    def clear(self) -> None:
        self.files.clear()
        self.batches.clear()


class Prefetcher:
    """Fills L2 ahead of need from background threads: request() returns at once."""

    def __init__(self, source: ShardSource, arena, threads: int = 2):
        self.source, self.arena = source, arena
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tokenmill-l3")
        self.decompressed: list[int] = []  # shards these threads decompressed (list.append is atomic)

    def request(self, shard: int) -> None:
        self.pool.submit(self._fill, shard)

    def _fill(self, shard: int) -> None:
        try:
            cached, decompressed = self.arena.fill(shard, lambda: read_shard(self.source, shard))
        except Exception:  # the reader hits the same error when it needs the shard, and raises it there
            return
        if decompressed:
            self.decompressed.append(cached.nbytes)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
