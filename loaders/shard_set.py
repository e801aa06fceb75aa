"""One shards folder on this node, read through L3 and L2: its global order, its shared-memory cache
and its decompressors. ShardLoader reads one of these, or several for a mixture.

The first batch after a start or a resume reads its rows' record batches alone instead of waiting
for whole shards; later batches are collated in one compiled pass straight out of L2.
"""

import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from loaders import shm_arena
from loaders.collate import BAD_ROW, CHANGED, KERNEL_BUILT, STALE, collate_into, collate_runs, row_problem
from loaders.fetch_workers import FetchWorkers
from loaders.order import GlobalOrder, OrderConfig
from loaders.shard_reader import (
    Prefetcher,
    RecordBatchReader,
    ShardError,
    ShardSource,
    read_shard,
)
from loaders.shm_arena import CachedShard, SharedArena, arena_bytes, arena_folder, arena_key, entry_bytes
from schemas.index import ShardEntry
from schemas.trust import cache_home

SHM_DIR_VARIABLE = "TOKENMILL_SHM_DIR"  # the default shm_dir
MAX_RETRIES = 100  # a batch re-read because a shard was evicted while being read; more means thrashing


@dataclass(frozen=True)
class ReadOptions:
    shuffle_block_shards: int = 4  # rows are shuffled across this many shards at a time
    cache_bytes: int | None = None  # the L2 limit (default: see cache_capacity)
    cache_dir: str | None = None  # remote shards, and L2 when /dev/shm is too small; default trust.cache_home()
    shm_dir: str | None = None  # where L2 lives: $TOKENMILL_SHM_DIR, else /dev/shm (a folder of the user's in it)
    num_workers: int = 0  # L3 decompression processes; 0: prefetch_threads threads
    prefetch_threads: int = 2
    claim_timeout: float = shm_arena.CLAIM_TIMEOUT  # seconds to wait for a shard another process is writing


class ShardSet:
    """`share`: this set's part of the node's L2 (a mixture splits it by the sources' sizes)."""

    def __init__(self, source: ShardSource, seed: int, options: ReadOptions, share: float = 1.0):
        if not KERNEL_BUILT:
            warnings.warn("loaders/_collate.c is not built (tokenmill was installed without a C compiler): batches are "
                          "collated by NumPy, ~4x slower; reinstall with one (pip install -e .)", stacklevel=3)
        self.source = source
        index, entries = self.source.index, self.source.entries
        self.seq_len, self.pad_id, self.vocab_size = index.seq_len, index.pad_id, index.vocab_size
        self.order = GlobalOrder([e.rows for e in entries], OrderConfig(seed, options.shuffle_block_shards))
        self._block_span = (0, 0)  # the positions of the shuffle block last entered
        self._views: dict[int, CachedShard] = {}  # L2 entries this process has looked up (checked on use)
        self._runs = np.zeros((len(entries), 4), np.int64)  # each shard's CachedShard.run, as last looked up ...
        self._generations = np.full(len(entries), -1, np.int64)  # ... at this generation (-1: never)
        self._direct = RecordBatchReader(self.source)  # for the first batch after a start or a resume
        self._first = True
        key = arena_key(self.source.location, index)
        shm = Path(options.shm_dir or os.environ.get(SHM_DIR_VARIABLE) or shm_arena.SHM)
        capacity = cache_capacity(entries, options.shuffle_block_shards, options.cache_bytes, shm, share)
        folder = arena_folder(key, arena_bytes(len(entries), capacity),
                              Path(options.cache_dir or cache_home()) / "arena", shm)
        self.arena = SharedArena(key, len(entries), capacity, folder, options.claim_timeout)
        self.fetcher = (FetchWorkers(source.location, options.cache_dir, folder, capacity, options.num_workers,
                                     options.claim_timeout)
                        if options.num_workers else Prefetcher(self.source, self.arena, options.prefetch_threads))
        self.counters = {"decompressions": 0, "cache_hits": 0, "cache_misses": 0, "bytes_decompressed": 0,
                         "rereads": 0, "direct_rows": 0}

    def restart(self) -> None:
        """After a resume: the next batch is a first batch again."""
        self._first = True

    def stats(self) -> dict:
        """The counters: this process's (its prefetch threads included) and the node's decompressions."""
        stats = dict(self.counters)
        stats["decompressions"] += len(self.fetcher.decompressed)
        stats["bytes_decompressed"] += sum(self.fetcher.decompressed)
        stats["node_decompressions"], stats["node_evictions"] = self.arena.decompressions, self.arena.evictions
        return stats

    def collate(self, positions: range, out: dict[str, np.ndarray], first_row: int = 0, pieces: int = 1) -> int:
        """The rows at these positions of this set's order, read out of L2 into `out` (collate.empty_batch)
        from row `first_row` on, their boundaries after out's first `pieces`; returns the boundaries so far."""
        shards, rows = self.order.locate_many(positions)
        out["sample_index"][first_row:first_row + len(positions)] = np.arange(positions.start, positions.stop)
        if self._first:
            self._first = False
            if all(self.arena.is_ready(s) or self._direct.can_read(s) for s in set(shards.tolist())):
                written = self._collate_direct(positions, shards.tolist(), rows.tolist(), out, first_row, pieces)
                self._prefetch_blocks(positions.start)  # after: the first batch has the cores to itself
                return written
        self._prefetch_blocks(positions.start)
        for _ in range(MAX_RETRIES):
            written = (collate_runs(self.arena, self._runs, self._generations, shards, rows, self.seq_len, self.pad_id,
                                    self.vocab_size, out, first_row, pieces) if KERNEL_BUILT
                       else self._collate_views(shards, rows, out, first_row, pieces))
            if written >= 0:
                return written
            stale = [shard for shard in dict.fromkeys(shards.tolist()) if not self._is_current(shard)]
            if written == BAD_ROW and not stale:
                raise self._bad_row(shards.tolist(), rows.tolist(), lambda s, r: self._views[s].arrays.row(r))
            if written == CHANGED:
                self.counters["rereads"] += 1  # a shard was evicted while we read it: read again
            for shard in stale:  # first use, or evicted since: look up again (waiting for L3 if needed)
                self._look_up(shard)
        raise RuntimeError(f"shards are evicted from the {self.arena.capacity / 2**20:.0f} MiB cache faster than "
                           "a batch can be read from them: raise cache_bytes")

    def _collate_direct(self, positions: range, shards: list[int], rows: list[int], out: dict[str, np.ndarray],
                        first_row: int, pieces: int) -> int:
        """The first batch: rows from L2 where cached, else from their record batch alone, while L3
        decompresses whole shards into L2 in the background."""
        cached = {s: self.arena.lookup(s) for s in dict.fromkeys(shards)}
        parts = [cached[s].arrays.row(r) if cached[s] is not None else self._direct.row(s, r)
                 for s, r in zip(shards, rows)]
        self.counters["direct_rows"] += sum(cached[s] is None for s in shards)
        try:  # copies: no view outlives it
            written = collate_into(parts, self.seq_len, self.pad_id, self.vocab_size, out, first_row, pieces)
        except ValueError:
            read = dict(zip(zip(shards, rows), parts))
            raise self._bad_row(shards, rows, lambda s, r: read[(s, r)]) from None
        finally:
            self._direct.clear()
        if not all(self.arena.still_valid(c) for c in cached.values() if c is not None):
            return self.collate(positions, out, first_row, pieces)  # evicted meanwhile: the usual way
        return written

    def _collate_views(self, shards: np.ndarray, rows: np.ndarray, out: dict[str, np.ndarray], first_row: int,
                       pieces: int) -> int:
        """collate_runs' work and answers by gather and finish, where the kernel is not built."""
        distinct = list(dict.fromkeys(shards.tolist()))
        if not all(map(self._is_current, distinct)):
            return STALE
        try:
            written = collate_into([self._views[s].arrays.row(r) for s, r in zip(shards.tolist(), rows.tolist())],
                                   self.seq_len, self.pad_id, self.vocab_size, out, first_row, pieces)
        except ValueError:
            written = BAD_ROW
        return written if all(map(self._is_current, distinct)) else CHANGED

    def _bad_row(self, shards: list[int], rows: list[int], row_of) -> ShardError:
        """The error naming the first row of a refused batch and why (`row_of(shard, row)`: its arrays)."""
        for shard, row in zip(shards, rows):
            try:
                problem = row_problem(*row_of(shard, row), self.seq_len, self.vocab_size)
            except IndexError:
                problem = "its offsets point outside the shard"
            if problem:
                return ShardError(f"{self.source.location}/{self.source.entries[shard].file}: row {row}: {problem} "
                                  "(not written by the shards job?)")
        return ShardError(f"shards {sorted(set(shards))} of {self.source.location} hold a row whose offsets point "
                          "outside its shard (not written by the shards job?)")

    def _is_current(self, shard: int) -> bool:
        """Whether the shard's L2 entry is still the one this process last looked up."""
        cached = self._views.get(shard)
        return cached is not None and self.arena.still_valid(cached)

    def _look_up(self, shard: int) -> None:
        """The shard's L2 entry (decompressed here, or waited for, when L3 has not put it there yet), its
        run and generation in self._runs and self._generations, for collate_runs."""
        cached = self.arena.lookup(shard)
        if cached is not None:
            self.counters["cache_hits"] += 1
        else:
            self.counters["cache_misses"] += 1
            cached, decompressed = self.arena.fill(shard, lambda: read_shard(self.source, shard))
            if decompressed:
                self.counters["decompressions"] += 1
                self.counters["bytes_decompressed"] += cached.nbytes
        self._views[shard] = cached
        self._runs[shard], self._generations[shard] = cached.run, cached.generation

    def _prefetch_blocks(self, position: int) -> None:
        """On entering a shuffle block, ask L3 for its shards and then the next block's (batches check
        their shards' entries in the compiled pass; they are marked used here, once a block)."""
        if self._block_span[0] <= position < self._block_span[1]:
            return
        block = self.order.block_of(position)
        self._block_span = self.order.block_span(*block)
        current = self.order.block_shards(*block)
        for shard in dict.fromkeys(current + self.order.block_shards(*self.order.next_block(*block))):
            if not self.arena.is_ready(shard):
                self.fetcher.request(shard)
        for shard in current:  # in use for the whole block: recently used for L2's eviction order
            if self.arena.is_ready(shard):
                self.arena.touch(shard)

    def close(self) -> None:
        self.fetcher.close()
        self.arena.close()


def decompressed_bytes(entries: tuple[ShardEntry, ...]) -> list[int]:
    """Each shard's size in L2, from the index (cu_seqlens guessed at one piece per 64 tokens)."""
    return [entry_bytes(e.rows, e.tokens, e.rows + e.tokens // 64) for e in entries]


def cache_capacity(entries: tuple[ShardEntry, ...], shuffle_block_shards: int, cache_bytes: int | None, shm: Path,
                   share: float = 1.0) -> int:
    """The L2 byte limit: `share` of `cache_bytes`, else the whole data set when it fits in `share` of
    half of /dev/shm's size, else that; at least two shuffle blocks of the largest shard, the most the
    reader needs at once."""
    sizes = decompressed_bytes(entries)
    smallest = (2 * shuffle_block_shards + 1) * max(sizes)
    if cache_bytes is not None:
        if cache_bytes * share < smallest:
            raise ValueError(f"cache_bytes {cache_bytes} gives this shards folder {int(cache_bytes * share)}, below "
                             f"what two shuffle blocks of its largest shard need: {smallest}")
        return int(cache_bytes * share)
    half_of_shm = int(shutil.disk_usage(shm).total // 2 * share) if shm.is_dir() else smallest
    return max(smallest, min(int(sum(sizes) * 1.1) + 2 * max(sizes), half_of_shm))
