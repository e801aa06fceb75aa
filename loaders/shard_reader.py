"""L3, the SSD decompressor: find shards (a local folder or any fsspec URL), check them, decompress
them into flat NumPy arrays, ahead of need in background threads (zstd releases the GIL).

Remote shards are fetched once into a local cache folder (written as NAME.part, renamed when
complete) and checked there. Every problem raises ShardError naming the shard: missing, wrong size,
checksum mismatch, unreadable Arrow, wrong schema. Never garbage, never a silent end.
"""

import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from schemas.shards import INDEX_FILE, ShardFileError, open_shard


class ShardError(RuntimeError):
    """A shard (or the index) that cannot be used; the message names it and says why."""


@dataclass(frozen=True)
class DecodedShard:
    """A shard's rows, decompressed: row i is tokens[token_offsets[i]:token_offsets[i + 1]]."""
    tokens: np.ndarray  # uint32, all rows end to end
    token_offsets: np.ndarray  # int64, rows + 1
    cu_seqlens: np.ndarray  # int32, all rows' boundaries end to end
    cu_offsets: np.ndarray  # int64, rows + 1

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.tokens, self.token_offsets, self.cu_seqlens, self.cu_offsets))

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return (self.tokens[self.token_offsets[i]:self.token_offsets[i + 1]],
                self.cu_seqlens[self.cu_offsets[i]:self.cu_offsets[i + 1]])


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
            self.cache = Path(cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "tokenmill", "shards"))
            self.cache = self.cache / self.root.strip("/").replace("/", "_")
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


def read_shard(source: ShardSource, shard: int) -> DecodedShard:
    """Checks and decompresses one shard."""
    entry = source.entries[shard]
    path = source.local_path(shard)
    try:
        table = open_shard(path, entry, source.index["checksum_algorithm"])
    except ShardFileError as e:
        raise ShardError(f"{source.location}/{entry['file']}: {e}") from None
    return DecodedShard(*_flat(table.column("tokens")), *_flat(table.column("cu_seqlens")))


def _flat(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values, offsets from 0) of a list column, owning their memory (the file is closed after)."""
    lists = column.combine_chunks()
    offsets = lists.offsets.to_numpy().astype(np.int64)
    values = lists.values.to_numpy()[offsets[0]:offsets[-1]].copy()
    return values, offsets - offsets[0]


class Prefetcher:
    """Reads shards in background threads: request() early, get() when needed."""

    def __init__(self, source: ShardSource, threads: int = 2):
        self.source = source
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tokenmill-l3")
        self.pending: dict[int, Future] = {}

    def request(self, shard: int) -> None:
        if shard not in self.pending:
            self.pending[shard] = self.pool.submit(read_shard, self.source, shard)

    def get(self, shard: int) -> DecodedShard:
        self.request(shard)
        return self.pending.pop(shard).result()  # re-raises the thread's ShardError here

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
