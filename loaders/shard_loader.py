"""ShardLoader: batches of packed rows in the global order, resumable and elastic.

    loader = ShardLoader("out/sample/shards", batch_size=8, rank=0, world_size=1, seed=0)
    batch = next(iter(loader))  # input_ids, labels, position_ids, cu_seqlens, sample_index (torch)
    state = loader.state_dict(); loader.load_state_dict(state)

This session's state (see the README): the global order, rank slicing, O(1) elastic resume, L3
(checked, prefetched decompression) and a per-process cache of decoded shards work. The node-wide
shared-memory cache (L2), worker processes and the pinned-memory GPU ring (L1) are not built yet:
`num_workers` must be 0 and `device` None or "cpu", and anything else is refused with a message.
"""

import time
from collections import OrderedDict

import numpy as np
import torch

from loaders.collate import collate
from loaders.order import GlobalOrder, OrderConfig, rank_positions
from loaders.shard_reader import DecodedShard, Prefetcher, ShardSource

STATE_VERSION = 1


class ShardLoader:
    def __init__(self, shards: str, batch_size: int, rank: int = 0, world_size: int = 1, seed: int = 0,
                 num_workers: int = 0, device=None, *, shuffle_block_shards: int = 4, cache_dir: str | None = None,
                 decoded_shards: int = 8, prefetch_threads: int = 2):
        if num_workers != 0:
            raise ValueError("num_workers > 0 needs the node-wide shared-memory cache, which is not built yet")
        if device is not None and torch.device(device).type != "cpu":
            raise ValueError("only device=None or 'cpu' for now: the pinned-memory GPU ring is not built yet")
        if batch_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"batch_size must be positive and rank in [0, world_size), got {batch_size}, {rank}, "
                             f"{world_size}")
        self.source = ShardSource(shards, cache_dir)
        self.seq_len, self.pad_id = self.source.index["seq_len"], self.source.index["pad_id"]
        self.order = GlobalOrder([e["rows"] for e in self.source.entries], OrderConfig(seed, shuffle_block_shards))
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size
        self.position = 0  # global position of the next global batch: the whole progress of a run
        self.prefetcher = Prefetcher(self.source, prefetch_threads)
        self.decoded: OrderedDict[int, DecodedShard] = OrderedDict()  # least recently used first
        self.decoded_limit = decoded_shards
        self._located: tuple[range, list[tuple[int, int]]] | None = None  # the prefetched batch's rows
        self.counters = {"decompressions": 0, "cache_hits": 0, "cache_misses": 0, "bytes_decompressed": 0,
                         "blocked_seconds": 0.0, "batches": 0}

    @property
    def global_batch_size(self) -> int:
        return self.batch_size * self.world_size

    def _shard(self, shard: int) -> DecodedShard:
        if shard in self.decoded:
            self.counters["cache_hits"] += 1
            self.decoded.move_to_end(shard)
            return self.decoded[shard]
        self.counters["cache_misses"] += 1
        decoded = self.prefetcher.get(shard)
        self.counters["decompressions"] += 1
        self.counters["bytes_decompressed"] += decoded.nbytes
        self.decoded[shard] = decoded
        while len(self.decoded) > self.decoded_limit:
            self.decoded.popitem(last=False)
        return decoded

    def _locate(self, positions: range) -> list[tuple[int, int]]:
        """(shard, row) of each position; the next batch's are found once, when it is prefetched."""
        if self._located is not None and self._located[0] == positions:
            return self._located[1]
        return [self.order.locate(p)[1:] for p in positions]

    def _prefetch(self, positions: range) -> None:
        """Start decompressing the shards of the next batch in the background."""
        self._located = (positions, self._locate(positions))
        for shard in {shard for shard, _ in self._located[1]}:
            if shard not in self.decoded:
                self.prefetcher.request(shard)

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        started = time.perf_counter()
        positions = rank_positions(self.position, self.batch_size, self.rank, self.world_size)
        rows = [self._shard(shard).row(row) for shard, row in self._locate(positions)]
        batch = collate(rows, self.seq_len, self.pad_id)
        batch["sample_index"] = np.asarray(positions, dtype=np.int64)
        self.position += self.global_batch_size
        self._prefetch(rank_positions(self.position, self.batch_size, self.rank, self.world_size))
        self.counters["batches"] += 1
        self.counters["blocked_seconds"] += time.perf_counter() - started
        return {key: torch.from_numpy(value) for key, value in batch.items()}

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
        self.position = int(state["position"])

    def close(self) -> None:
        self.prefetcher.close()
