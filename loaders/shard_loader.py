"""ShardLoader: batches of packed rows in the global order, resumable and elastic, through three tiers.

    loader = ShardLoader("out/sample/shards", batch_size=8, rank=0, world_size=1, seed=0)
    batch = next(loader)  # input_ids, labels, position_ids, cu_seqlens, sample_index (torch)
    state = loader.state_dict(); loader.load_state_dict(state)

- L3 (shard_reader, fetch_workers): shards checked and decompressed ahead of need, the current and
  the next shuffle block, by `prefetch_threads` threads or `num_workers` processes.
- L2 (shm_arena): the decompressed shards, in one shared-memory arena per node for every rank and
  worker: each shard is decompressed once per node while it stays in the `cache_bytes` limit.
- L1 (device_ring): batches are collated here straight out of L2 (the one copy a batch needs:
  uint32 → int64) and copied to `device` `prefetch_batches` batches ahead.
The first batch after a start or a resume reads its rows' record batches alone instead of waiting
for whole shards.
"""

import os
import shutil
import time
from pathlib import Path

import numpy as np
import torch

from loaders import shm_arena
from loaders.collate import collate_runs, finish, gather
from loaders.device_ring import BatchRing
from loaders.fetch_workers import FetchWorkers
from loaders.order import GlobalOrder, OrderConfig, rank_positions
from loaders.shard_reader import DEFAULT_CACHE_DIR, Prefetcher, RecordBatchReader, ShardSource, read_shard
from loaders.shm_arena import CachedShard, SharedArena, arena_bytes, arena_folder, arena_key, entry_bytes

STATE_VERSION = 1
SHM_DIR_VARIABLE = "TOKENMILL_SHM_DIR"  # the default shm_dir
MAX_RETRIES = 100  # a batch re-read because a shard was evicted while being read; more means thrashing


class ShardLoader:
    """`batch_size` rows per rank per step. Keyword options: shuffle_block_shards (rows are shuffled
    across this many shards at a time), cache_bytes (the L2 limit), cache_dir (local cache root: remote
    shards, and L2 when /dev/shm is too small; default ~/.cache/tokenmill), shm_dir (where L2 lives;
    default $TOKENMILL_SHM_DIR, else /dev/shm: one folder per node, so several "nodes" on one machine
    each keep their own cache), prefetch_batches (L1 depth), prefetch_threads (L3 threads when
    num_workers is 0)."""

    def __init__(self, shards: str, batch_size: int, rank: int = 0, world_size: int = 1, seed: int = 0,
                 num_workers: int = 0, device=None, *, shuffle_block_shards: int = 4, cache_bytes: int | None = None,
                 cache_dir: str | None = None, shm_dir: str | None = None, prefetch_batches: int = 2,
                 prefetch_threads: int = 2):
        if batch_size < 1 or not 0 <= rank < world_size or num_workers < 0:
            raise ValueError(f"batch_size must be positive, rank in [0, world_size) and num_workers >= 0, got "
                             f"{batch_size}, {rank}, {world_size}, {num_workers}")
        self.device = torch.device(device or "cpu")
        self.ring = BatchRing(prefetch_batches, self.device)
        self.source = ShardSource(shards, cache_dir)
        index, entries = self.source.index, self.source.entries
        self.seq_len, self.pad_id = index["seq_len"], index["pad_id"]
        self.order = GlobalOrder([e["rows"] for e in entries], OrderConfig(seed, shuffle_block_shards))
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size
        self.position = 0  # global position of the next global batch handed out: the whole progress of a run
        self._produced = 0  # ... and of the next one collated (ahead by the batches in the ring)
        self._block: tuple[int, int] | None = None
        self._views: dict[int, CachedShard] = {}  # L2 entries this process has looked up (checked on use)
        self._runs = np.zeros((len(entries), 4), np.int64)  # each shard's CachedShard.run, as last looked up
        self._direct = RecordBatchReader(self.source)  # for the first batch after a start or a resume
        self._first = True

        key = arena_key(self.source.location, index)
        shm = Path(shm_dir or os.environ.get(SHM_DIR_VARIABLE) or shm_arena.SHM)
        capacity = cache_capacity(entries, shuffle_block_shards, cache_bytes, shm)
        folder = arena_folder(key, arena_bytes(len(entries), capacity), Path(cache_dir or DEFAULT_CACHE_DIR) / "arena",
                              shm)
        self.arena = SharedArena(key, len(entries), capacity, folder)
        self.fetcher = (FetchWorkers(shards, cache_dir, folder, capacity, num_workers) if num_workers
                        else Prefetcher(self.source, self.arena, prefetch_threads))
        self.counters = {"decompressions": 0, "cache_hits": 0, "cache_misses": 0, "bytes_decompressed": 0,
                         "blocked_seconds": 0.0, "batches": 0, "rereads": 0, "direct_rows": 0}

    @property
    def global_batch_size(self) -> int:
        return self.batch_size * self.world_size

    def stats(self) -> dict:
        """The counters: this process's (its prefetch threads included) and the node's decompressions."""
        stats = dict(self.counters)
        stats["decompressions"] += len(self.fetcher.decompressed)
        stats["bytes_decompressed"] += sum(self.fetcher.decompressed)
        stats["node_decompressions"], stats["node_evictions"] = self.arena.decompressions, self.arena.evictions
        return stats

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        started = time.perf_counter()
        # The ring fills up from the second call on: the first batch after a start or a resume is
        # handed out as soon as it exists, not after `prefetch_batches` more.
        target = 1 if self._produced == self.position else self.ring.depth + 1
        while len(self.ring) < target:
            self.ring.push(self._collate(self._produced))
            self._produced += self.global_batch_size
        batch = self.ring.pop()
        self.position += self.global_batch_size
        self.counters["batches"] += 1
        self.counters["blocked_seconds"] += time.perf_counter() - started
        return batch

    def _collate(self, position: int) -> dict[str, np.ndarray]:
        """This rank's part of the global batch at `position`, read out of L2."""
        positions = rank_positions(position, self.batch_size, self.rank, self.world_size)
        shards, rows = self.order.locate_many(positions)
        if self._first:
            self._first = False
            if all(self.arena.is_ready(s) or self._direct.can_read(s) for s in set(shards.tolist())):
                batch = self._collate_direct(positions, shards.tolist(), rows.tolist())
                self._prefetch_blocks(positions.start)  # after: the first batch has the cores to itself
                return batch
        self._prefetch_blocks(positions.start)
        distinct = set(shards.tolist())
        for _ in range(MAX_RETRIES):
            cached = [self._cached(shard) for shard in distinct]
            for entry in cached:
                self._runs[entry.shard] = entry.run
            batch = collate_runs(self.arena.words, self._runs[shards], rows, self.seq_len, self.pad_id)
            if all(map(self.arena.still_valid, cached)):
                if batch is None:
                    raise ValueError(f"shards {sorted(distinct)} hold a row that does not fit seq_len {self.seq_len} "
                                     "or boundaries that do not rise (not written by the shards job?)")
                batch["sample_index"] = np.asarray(positions, dtype=np.int64)
                return batch
            self.counters["rereads"] += 1  # a shard was evicted while we read it: read again
        raise RuntimeError(f"shards are evicted from the {self.arena.capacity / 2**20:.0f} MiB cache faster than "
                           "a batch can be read from them: raise cache_bytes")

    def _collate_direct(self, positions: range, shards: list[int], rows: list[int]) -> dict[str, np.ndarray]:
        """The first batch: rows from L2 where cached, else from their record batch alone, while L3
        decompresses whole shards into L2 in the background."""
        cached = {s: self.arena.lookup(s) for s in dict.fromkeys(shards)}
        parts = [cached[s].arrays.row(r) if cached[s] is not None else self._direct.row(s, r)
                 for s, r in zip(shards, rows)]
        self.counters["direct_rows"] += sum(cached[s] is None for s in shards)
        gathered = gather(parts, self.seq_len, self.pad_id)  # copies: no view outlives this
        self._direct.clear()
        if not all(self.arena.still_valid(c) for c in cached.values() if c is not None):
            return self._collate(positions.start)  # evicted meanwhile: the usual way
        batch = finish(*gathered)
        batch["sample_index"] = np.asarray(positions, dtype=np.int64)
        return batch

    def _cached(self, shard: int) -> CachedShard:
        cached = self._views.get(shard)
        if cached is not None and self.arena.still_valid(cached):
            self.arena.touch(shard)
        else:
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
        return cached

    def _prefetch_blocks(self, position: int) -> None:
        """On entering a shuffle block, ask L3 for its shards and then the next block's."""
        block = self.order.block_of(position)
        if block != self._block:
            self._block = block
            upcoming = self.order.block_shards(*block) + self.order.block_shards(*self.order.next_block(*block))
            for shard in dict.fromkeys(upcoming):
                if not self.arena.is_ready(shard):
                    self.fetcher.request(shard)

    def state_dict(self) -> dict:
        """Small and O(1) to restore: where the next global batch starts, and what fixes the order."""
        return {"version": STATE_VERSION, "position": self.position, "seed": self.order.cfg.seed,
                "shuffle_block_shards": self.order.cfg.shuffle_block_shards,
                "global_batch_size": self.global_batch_size, "epoch_size": self.order.epoch_size}

    def load_state_dict(self, state: dict) -> None:
        """Continues exactly where `state` stopped, at any world size with the same global batch."""
        mine = self.state_dict()
        for key in ("version", "seed", "shuffle_block_shards", "global_batch_size", "epoch_size"):
            if state.get(key) != mine[key]:
                raise ValueError(f"cannot resume: {key} was {state.get(key)!r}, this loader has {mine[key]!r}")
        self.position = self._produced = int(state["position"])
        self.ring.clear()
        self._first = True

    def close(self) -> None:
        self.fetcher.close()
        self.ring.clear()
        self.arena.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def cache_capacity(entries: list[dict], shuffle_block_shards: int, cache_bytes: int | None, shm: Path) -> int:
    """The L2 byte limit: `cache_bytes`, else the whole data set when it fits in half of /dev/shm's size,
    else that half; at least two shuffle blocks of the largest shard, the most the reader needs at once."""
    # Decompressed size from the index; cu_seqlens is guessed at one piece per 64 tokens.
    sizes = [entry_bytes(e["rows"], e["tokens"], e["rows"] + e["tokens"] // 64) for e in entries]
    smallest = (2 * shuffle_block_shards + 1) * max(sizes)
    if cache_bytes is not None:
        if cache_bytes < smallest:
            raise ValueError(f"cache_bytes {cache_bytes} is below what two shuffle blocks of the largest shard "
                             f"need: {smallest}")
        return cache_bytes
    half_of_shm = shutil.disk_usage(shm).total // 2 if shm.is_dir() else smallest
    return max(smallest, min(int(sum(sizes) * 1.1) + 2 * max(sizes), half_of_shm))
