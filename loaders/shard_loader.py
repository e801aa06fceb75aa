"""ShardLoader: batches of packed rows in the global order, resumable and elastic, through three tiers,
from one shards folder or a weighted mixture of several.

    loader = ShardLoader("out/sample/shards", batch_size=8, rank=0, world_size=1, seed=0)
    loader = ShardLoader("out/shards/mixture.json", batch_size=8, ...)           # weights from the file
    loader = ShardLoader({"web": "s/web", "zh": "s/zh"}, 8, weights={"web": 0.7, "zh": 0.3})
    batch = next(loader)  # input_ids, labels, position_ids, cu_seqlens, sample_index, source (torch)
    state = loader.state_dict(); loader.load_state_dict(state)

- L3 (shard_reader, fetch_workers): shards checked and decompressed ahead of need, the current and
  the next shuffle block, by `prefetch_threads` threads or `num_workers` processes.
- L2 (shm_arena): the decompressed shards, in one shared-memory arena per shards folder per node for
  every rank and worker: each shard is decompressed once per node while it stays in the `cache_bytes`
  limit.
- L1 (device_ring): batches are collated straight out of L2 (the one copy a batch needs: uint32 →
  int64) and copied to `device` `prefetch_batches` batches ahead.

Mixtures (loaders/mixture.py): each global batch of batch_size x world_size rows takes from each
source the rows the quota method gives it, so after every global batch every source's cumulative
rows are within one row of its exact share; the batch holds them source after source, and rank r
takes its slice. Each source keeps its own order (its own seed, from the run's seed and its name)
and its own epochs: one that runs out starts again with a new shuffle.
"""

import bisect
import hashlib
import math
import numbers
import time
from collections import deque

import numpy as np
import torch

from loaders.collate import batch_of, empty_batch
from loaders.device_ring import BatchRing
from loaders.mixture import Schedule, integer_weights, sources_of
from loaders.shard_reader import ShardSource
from loaders.shard_set import ReadOptions, ShardSet, decompressed_bytes
from schemas.mixture import SHARED_INDEX_KEYS, MixtureError

STATE_VERSION = 2


def source_seed(seed: int, name: str) -> int:
    """The order seed of a mixture's source; a single folder keeps the run's seed itself."""
    if name == "default":
        return seed
    return int.from_bytes(hashlib.blake2b(f"{seed}/{name}".encode(), digest_size=4).digest(), "little")


class ShardLoader:
    """`batch_size` rows per rank per step. `shards`: a shards folder or URL, a mixture.json, or a
    {name: folder} dict with `weights`. Keyword options: see ReadOptions (shuffle_block_shards,
    cache_bytes, cache_dir, shm_dir, prefetch_threads), and prefetch_batches (L1 depth)."""

    def __init__(self, shards, batch_size: int, rank: int = 0, world_size: int = 1, seed: int = 0,
                 num_workers: int = 0, device=None, *, weights: dict[str, float] | None = None,
                 prefetch_batches: int = 2, **options):
        counts = (batch_size, rank, world_size, seed, num_workers)  # (a float or -1 failed only at the first batch)
        if not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in counts) or batch_size < 1 \
                or not 0 <= rank < world_size or num_workers < 0 or seed < 0:
            raise ValueError(f"batch_size must be a positive whole number, rank one in [0, world_size), num_workers "
                             f"and seed whole numbers >= 0, got {batch_size!r}, {rank!r}, {world_size!r}, "
                             f"{num_workers!r}, {seed!r}")
        self.device = torch.device(device or "cpu")
        self.ring = BatchRing(prefetch_batches, self.device)
        self.batch_size, self.rank, self.world_size, self.seed = batch_size, rank, world_size, seed
        self.options = ReadOptions(num_workers=num_workers, **options)
        described = sources_of(shards, weights)
        self.sources = [s.name for s in described]
        located = [ShardSource(s.location, self.options.cache_dir) for s in described]
        _check_alike(self.sources, located)
        # L2 is one budget per node: each source gets its share by decompressed size.
        sizes = [sum(decompressed_bytes(source.entries)) for source in located]
        self.sets = [ShardSet(source, source_seed(seed, s.name), self.options, size / sum(sizes))
                     for s, source, size in zip(described, located, sizes)]
        self.seq_len, self.pad_id = self.sets[0].seq_len, self.sets[0].pad_id
        self._weights = [s.weight for s in described]
        self._schedule = Schedule(self._weights)
        self.position = 0  # global position of the next global batch handed out: the whole progress of a run
        self._produced = 0  # ... and of the next one collated (ahead by the batches in the ring)
        self._consumed = [0] * len(self.sets)  # rows each source gave up to `position`
        self._ahead = [0] * len(self.sets)  # ... up to `_produced`
        # per batch in the ring: how far it moves `position` (skipped stretches before it included) and
        # the rows each source gives up to its end
        self._given: deque[tuple[int, list[int]]] = deque()
        self._skips: list[tuple[int, int]] = []  # stretches of global positions [start, end) never served
        self._merged: list[tuple[int, int]] = []  # ... overlapping ones merged, for a lookup by bisection
        self.served_position = 0  # global position of the batch next() returned last
        self._origin = (0, [0] * len(self.sets))  # where the current weights took effect: (position, rows)
        self.counters = {"blocked_seconds": 0.0, "batches": 0}

    @property
    def embedding_size(self) -> int:
        return self.sets[0].source.index.embedding_size

    @property
    def global_batch_size(self) -> int:
        return self.batch_size * self.world_size

    def stats(self) -> dict:
        """This process's counters summed over sources (decompressions, its threads' included, and the
        node's), seconds blocked in next(), and per source its epoch and the rows it has served."""
        stats = dict(self.counters)
        for shard_set in self.sets:
            for key, value in shard_set.stats().items():
                stats[key] = stats.get(key, 0) + value
        stats["sources"] = {name: {"rows": rows, "epoch": rows // shard_set.order.epoch_size}
                            for name, rows, shard_set in zip(self.sources, self._consumed, self.sets)}
        return stats

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        started = time.perf_counter()
        # The ring fills up from the second call on: the first batch after a start or a resume is
        # handed out as soon as it exists, not after `prefetch_batches` more.
        target = 1 if self._produced == self.position else self.ring.depth + 1
        while len(self.ring) < target:
            self.ring.push(self._collate())
        batch = self.ring.pop()
        advance, given = self._given.popleft()
        self.served_position = self.position + advance - self.global_batch_size
        self.position += advance
        self._consumed = [a + b for a, b in zip(self._consumed, given)]
        self.counters["batches"] += 1
        self.counters["blocked_seconds"] += time.perf_counter() - started
        return batch

    @property
    def skips(self) -> list[tuple[int, int]]:
        return list(self._skips)

    def skip(self, start: int, end: int) -> None:
        """Never serves the global positions [start, end) (whole global batches, none served yet): the
        batches there are passed over as if trained on, so every later batch is the one it would have
        been. Part of the state: the order stays a function of the seed, the position and the skips."""
        batch = self.global_batch_size
        if not (_is_stretch(start, end, batch) and self.position <= start):
            raise ValueError(f"a skip is whole global batches of {batch} rows from the position {self.position} "
                             f"on, got [{start}, {end})")
        self._set_skips([*self._skips, (int(start), int(end))])
        self._restart(self.position, self._consumed)

    def _set_skips(self, skips) -> None:
        self._skips = sorted(skips)
        self._merged = []
        for start, end in self._skips:
            if self._merged and start <= self._merged[-1][1]:
                self._merged[-1] = (self._merged[-1][0], max(end, self._merged[-1][1]))
            else:
                self._merged.append((start, end))

    def _skip_end(self, position: int) -> int | None:
        """The end of the skipped stretch holding `position`, or None."""
        at = bisect.bisect_right(self._merged, (position, math.inf)) - 1
        return self._merged[at][1] if at >= 0 and position < self._merged[at][1] else None

    def _next_rows(self, rows: int) -> list[int]:
        """Rows each source gives the next `rows` after `_ahead`, as the weights' schedule says."""
        return self._schedule.rows([ahead - at for ahead, at in zip(self._ahead, self._origin[1])], rows)

    def _collate(self) -> dict[str, np.ndarray]:
        """This rank's part of the next global batch to produce: each source's rows, source after source,
        collated into one set of arrays (the skipped stretches before it passed over, each in one step: a
        stretch of 10**12 batches had been stepped through a batch at a time)."""
        moved, passed = 0, [0] * len(self.sets)
        while (end := self._skip_end(self._produced + moved)) is not None:
            given = self._next_rows(end - self._produced - moved)
            self._ahead = [a + b for a, b in zip(self._ahead, given)]
            passed = [p + g for p, g in zip(passed, given)]
            moved = end - self._produced
        given = self._next_rows(self.global_batch_size)
        lo, hi = self.rank * self.batch_size, (self.rank + 1) * self.batch_size
        out, pieces, start = empty_batch(self.batch_size, self.seq_len), 1, 0
        source = np.empty(self.batch_size, np.int64)
        for i, rows in enumerate(given):
            a, b = max(lo, start), min(hi, start + rows)
            if a < b:
                first = self._ahead[i] + a - start  # this source's own position of its first row here
                pieces = self.sets[i].collate(range(first, first + b - a), out, a - lo, pieces)
                source[a - lo:b - lo] = i
            start += rows
        self._ahead = [a + b for a, b in zip(self._ahead, given)]
        self._given.append((moved + self.global_batch_size, [p + g for p, g in zip(passed, given)]))
        self._produced += moved + self.global_batch_size
        return {**batch_of(out, pieces), "source": source}

    def state_dict(self) -> dict:
        """Small and O(1) to restore: where the next global batch starts, each source's rows so far, and
        what fixes the order and the schedule."""
        return {"version": STATE_VERSION, "position": self.position, "seed": self.seed,
                "shuffle_block_shards": self.options.shuffle_block_shards,
                "global_batch_size": self.global_batch_size,
                "sources": [{"name": name, "rows": rows, "epoch_size": s.order.epoch_size}
                            for name, rows, s in zip(self.sources, self._consumed, self.sets)],
                "weights": dict(zip(self.sources, self._weights)),
                "weights_since": {"position": self._origin[0], "rows": list(self._origin[1])},
                "skips": [list(stretch) for stretch in self._skips]}

    def load_state_dict(self, state: dict, allow_new_weights: bool = False, keep_skips: bool = False) -> None:
        """Continues exactly where `state` stopped, at any world size with the same global batch. A state
        saved with other weights loads only with allow_new_weights: every source then goes on from
        where it stopped, the new weights applying from here. keep_skips (a run going back to its own
        earlier state): this loader's skips from that position on stay, with the state's."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise ValueError(f"cannot resume: loader state version "
                             f"{state.get('version') if isinstance(state, dict) else state!r}, this loader reads "
                             f"{STATE_VERSION}")
        mine = self.state_dict()
        for key in ("seed", "shuffle_block_shards", "global_batch_size"):
            if state.get(key) != mine[key]:
                raise ValueError(f"cannot resume: {key} was {state.get(key)!r}, this loader has {mine[key]!r}")
        position, rows, since = _progress(state, self.global_batch_size)
        saved = [(s["name"], s["epoch_size"]) for s in state["sources"]]
        if saved != [(s["name"], s["epoch_size"]) for s in mine["sources"]]:
            raise ValueError(f"cannot resume: the sources were {saved}, this loader has "
                             f"{[(s['name'], s['epoch_size']) for s in mine['sources']]}")
        try:
            same_weights = integer_weights(state["weights"]) == integer_weights(mine["weights"])
        except (MixtureError, AttributeError, TypeError) as e:
            raise ValueError(f"cannot resume: the loader state's weights {state.get('weights')!r}: {e}") from None
        if not same_weights and not allow_new_weights:
            raise ValueError(f"cannot resume: the weights were {state['weights']}, this loader has "
                             f"{mine['weights']} (allow_new_weights=True continues with the new ones)")
        if same_weights and not self._schedule.reaches([r - b for r, b in zip(rows, since[1])]):
            # rows 0 and 800 at 800 of weights 1:1 had loaded, every later batch 800 rows off the shares
            raise ValueError(f"cannot resume: the loader state's rows {rows} are not what its weights "
                             f"{state['weights']} give from {since}")
        self._origin = since if same_weights else (position, list(rows))
        kept = [stretch for stretch in self._skips if stretch[0] >= position] if keep_skips else []
        self._set_skips(set(_skips_of(state.get("skips", []), self.global_batch_size)) | set(kept))
        self._restart(position, rows)

    def _restart(self, position: int, rows: list[int]) -> None:
        """Produces again from `position` (each source at `rows`): what was prefetched is dropped."""
        self.position = self._produced = position
        self._consumed, self._ahead = list(rows), list(rows)
        self._given.clear()
        self.ring.clear()
        for shard_set in self.sets:
            shard_set.restart()

    def close(self) -> None:
        self.ring.clear()
        for shard_set in self.sets:
            shard_set.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _whole(value) -> bool:
    """A count of a saved state: a whole number (not a bool, a float or a text of one), bounded."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= value < 2**62


def _is_stretch(start, end, batch: int) -> bool:
    """Whether [start, end) is a skipped stretch: whole numbers (_whole), whole global batches, not empty."""
    return _whole(start) and _whole(end) and start % batch == 0 and end % batch == 0 and start < end


def _progress(state: dict, batch: int) -> tuple[int, list[int], tuple[int, list[int]]]:
    """(position, each source's rows, where the weights took effect) of a saved state, checked to agree: a
    state from elsewhere that did not (rows=3 at position 8) had served rows again under another position."""
    sources, since = state.get("sources"), state.get("weights_since")
    if not (isinstance(sources, list) and all(isinstance(s, dict) and {"name", "rows", "epoch_size"} <= s.keys()
                                              for s in sources) and isinstance(since, dict)):
        raise ValueError("cannot resume: the loader state has no list of sources (name, rows, epoch_size) or "
                         "no weights_since")
    position, rows = state.get("position"), [s["rows"] for s in sources]
    if not _whole(position) or position % batch or not all(map(_whole, rows)) or sum(rows) != position:
        raise ValueError(f"cannot resume: the loader state's position {position!r} is not whole global batches of "
                         f"{batch} rows that its sources' rows {rows!r} add up to")
    at, before = since.get("position"), since.get("rows")
    if not (_whole(at) and at <= position and isinstance(before, list) and len(before) == len(rows)
            and all(_whole(b) and b <= r for b, r in zip(before, rows)) and sum(before) == at):
        raise ValueError(f"cannot resume: the loader state's weights_since {since!r} is not a point of its "
                         f"progress ({position}, {rows})")
    return int(position), [int(r) for r in rows], (int(at), [int(b) for b in before])


def _skips_of(saved, batch: int) -> list[tuple[int, int]]:
    """A saved state's skipped stretches, checked: whole global batches, each non-empty, in order."""
    if not isinstance(saved, list) or not all(isinstance(pair, list | tuple) and len(pair) == 2
                                              and all(map(_whole, pair)) for pair in saved):
        raise ValueError(f"cannot resume: the loader state's skips are not [start, end] pairs: {str(saved)[:200]}")
    skips = [(int(a), int(b)) for a, b in saved]
    if not all(_is_stretch(a, b, batch) for a, b in skips) or skips != sorted(skips):
        raise ValueError(f"cannot resume: the loader state's skips {skips} are not sorted whole global batches")
    return skips


def _check_alike(names: list[str], sources: list[ShardSource]) -> None:
    first = sources[0].index
    for name, source in zip(names[1:], sources[1:]):
        for key in SHARED_INDEX_KEYS:
            if getattr(source.index, key) != getattr(first, key):
                raise MixtureError(f"source {name!r}: {key} {getattr(source.index, key)!r} differs from source "
                                   f"{names[0]!r}'s {getattr(first, key)!r} (one tokenizer and seq_len for all)")
