"""The global sample order: a pure function of (seed, epoch, global sample index).

Positions count samples from the start of training, epochs concatenated: position p is sample
p % N of epoch p // N (N rows in all shards). In each epoch the shards are shuffled, taken in blocks
of `shuffle_block_shards` consecutive shards, and the rows of a block are shuffled together, so a
batch mixes several shards while a reader needs only a block's shards at a time (the
mosaicml-streaming "py1b" idea). Every permutation is seeded by (seed, epoch[, block]) only, so the
order is the same whatever the world size, the workers or what is cached.

Rank r of w takes rows [r * batch_size, (r + 1) * batch_size) of each global batch of
batch_size * w rows. A run's whole progress is one number (the position of the next global batch):
resuming is O(1), and resuming at another world size with the same global batch continues with
exactly the samples an uninterrupted run would have seen.
"""

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OrderConfig:
    seed: int = 0  # every permutation derives from it and the epoch
    shuffle_block_shards: int = 4  # rows are shuffled across this many shards at a time


class GlobalOrder:
    def __init__(self, rows_per_shard: list[int], cfg: OrderConfig):
        if not rows_per_shard or min(rows_per_shard) < 0 or sum(rows_per_shard) == 0:
            raise ValueError("the shards hold no rows")
        if cfg.shuffle_block_shards < 1:
            raise ValueError("shuffle_block_shards must be at least 1")
        self.rows = np.asarray(rows_per_shard, dtype=np.int64)
        self.cfg = cfg
        self.epoch_size = int(self.rows.sum())

    @functools.lru_cache(maxsize=4)
    def _epoch(self, epoch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(shards in this epoch's order, first position of each block, block -> first shard slot)."""
        shards = np.random.Generator(np.random.PCG64([self.cfg.seed, epoch])).permutation(len(self.rows))
        slots = np.arange(0, len(shards), self.cfg.shuffle_block_shards)
        block_rows = np.add.reduceat(self.rows[shards], slots)
        return shards, np.concatenate([[0], np.cumsum(block_rows)]), slots

    @functools.lru_cache(maxsize=8)
    def _block(self, epoch: int, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(permutation of the block's rows, the block's shards, their cumulative row counts)."""
        shards, starts, slots = self._epoch(epoch)
        members = shards[slots[block]:slots[block] + self.cfg.shuffle_block_shards]
        cumulative = np.concatenate([[0], np.cumsum(self.rows[members])])
        rng = np.random.Generator(np.random.PCG64([self.cfg.seed, epoch, block]))
        return rng.permutation(int(cumulative[-1])), members, cumulative

    def locate(self, position: int) -> tuple[int, int, int]:
        """(epoch, shard, row) of the sample at `position`."""
        if position < 0:
            raise ValueError(f"position {position} is negative")
        epoch, index = divmod(position, self.epoch_size)
        _, starts, _ = self._epoch(epoch)
        block = int(np.searchsorted(starts, index, side="right")) - 1
        permutation, members, cumulative = self._block(epoch, block)
        local = int(permutation[index - starts[block]])
        member = int(np.searchsorted(cumulative, local, side="right")) - 1
        return epoch, int(members[member]), local - int(cumulative[member])


def rank_positions(global_batch_start: int, batch_size: int, rank: int, world_size: int) -> range:
    """The positions rank `rank` reads from the global batch starting at `global_batch_start`."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in [0, {world_size})")
    first = global_batch_start + rank * batch_size
    return range(first, first + batch_size)
