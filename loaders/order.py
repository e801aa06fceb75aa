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
        # Caches of this order's own: a mixture has an order per source, and a cache shared by the
        # class would have them evict each other on every batch.
        self._epoch = functools.lru_cache(maxsize=4)(self._epoch)
        self._block = functools.lru_cache(maxsize=8)(self._block)
        # (first position, stop, shard_of, row_of) of the block last read
        self._last_block = (0, 0, np.zeros(0, np.int64), np.zeros(0, np.int64))

    def _epoch(self, epoch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(shards in this epoch's order, first position of each block, block -> first shard slot)."""
        shards = np.random.Generator(np.random.PCG64([self.cfg.seed, epoch])).permutation(len(self.rows))
        slots = np.arange(0, len(shards), self.cfg.shuffle_block_shards)
        block_rows = np.add.reduceat(self.rows[shards], slots)
        return shards, np.concatenate([[0], np.cumsum(block_rows)]), slots

    def _block(self, epoch: int, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(shard, row) of each of the block's positions, in order: two int64 arrays."""
        shards, _, slots = self._epoch(epoch)
        members = shards[slots[block]:slots[block] + self.cfg.shuffle_block_shards]
        counts = self.rows[members]
        total = int(counts.sum())
        rng = np.random.Generator(np.random.PCG64([self.cfg.seed, epoch, block]))
        permutation = rng.permutation(total)
        shard_of = np.repeat(members, counts)
        row_of = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        return shard_of[permutation], row_of[permutation]

    def block_of(self, position: int) -> tuple[int, int]:
        """(epoch, block) holding `position`."""
        if position < 0:
            raise ValueError(f"position {position} is negative")
        epoch, index = divmod(position, self.epoch_size)
        return epoch, int(np.searchsorted(self._epoch(epoch)[1], index, side="right")) - 1

    def block_span(self, epoch: int, block: int) -> tuple[int, int]:
        """The positions of a block: [start, stop)."""
        starts = self._epoch(epoch)[1]
        first = epoch * self.epoch_size
        return first + int(starts[block]), first + int(starts[block + 1])

    def block_shards(self, epoch: int, block: int) -> list[int]:
        """The shards a block reads, in the order they are first needed."""
        shard_of = self._block(epoch, block)[0]
        _, first = np.unique(shard_of, return_index=True)
        return [int(shard_of[i]) for i in sorted(first)]

    def next_block(self, epoch: int, block: int) -> tuple[int, int]:
        return (epoch, block + 1) if block + 1 < len(self._epoch(epoch)[2]) else (epoch + 1, 0)

    def locate_many(self, positions: range) -> tuple[np.ndarray, np.ndarray]:
        """(shard, row) arrays for consecutive positions; slices of cached per-block tables."""
        first, stop, shard_of, row_of = self._last_block
        if first <= positions.start and positions.stop <= stop:  # a batch inside the block of the last one
            return shard_of[positions.start - first:positions.stop - first], row_of[positions.start - first:
                                                                                    positions.stop - first]
        shards, rows = [], []
        position, end = positions.start, positions.stop
        while position < end:
            epoch, block = self.block_of(position)
            starts = self._epoch(epoch)[1]
            first = epoch * self.epoch_size + int(starts[block])
            stop = epoch * self.epoch_size + int(starts[block + 1])
            take = min(end, stop) - position
            shard_of, row_of = self._block(epoch, block)
            self._last_block = (first, stop, shard_of, row_of)
            shards.append(shard_of[position - first:position - first + take])
            rows.append(row_of[position - first:position - first + take])
            position += take
        if len(shards) == 1:
            return shards[0], rows[0]
        return np.concatenate(shards or [np.zeros(0, np.int64)]), np.concatenate(rows or [np.zeros(0, np.int64)])

    def locate(self, position: int) -> tuple[int, int, int]:
        """(epoch, shard, row) of the sample at `position`."""
        shards, rows = self.locate_many(range(position, position + 1))
        return position // self.epoch_size, int(shards[0]), int(rows[0])
