"""The benchmark side of decontamination: every item's units and a table of its seeds, small enough to
broadcast to every task.

A seed is `seed_units` consecutive units (5 by default) of an item, at every position. The table maps a
seed's 64-bit hash (a 32-bit fingerprint in the slot its other bits choose; open addressing) to the
list of places it occurs: positions in the items' concatenated units. A document's seeds are looked
up position by position (prep/decontam/match.py); a hit is the start of a possible match that the
items' units then confirm, so the table's rare false fingerprint hits cost a comparison, never a
wrong match. Every occurrence of every seed is kept, however many items share it (no frequency
cut-off: the n-grams that many items share are where contamination hides).

Cost: 4 bytes per item unit (its hash), 4 per seed occurrence and about 12 per distinct seed (the
table at most half full, and where each seed's occurrences start): about 20 bytes per unit, 1-2 KB
for a benchmark question with its choices.
"""

from dataclasses import dataclass

import numpy as np

from prep.compiled import kernel
from prep.decontam.units import units_of

UNIT_BASE = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class IndexConfig:
    """How benchmark items are cut into what is matched."""
    exact_units: int = 13  # an item sharing this many units in a row with a document is found (exact); words
    # the same for an item mostly in Chinese, Japanese or Korean characters: a 13-word English run carries
    # about 90 bits, a Chinese character about 6
    cjk_exact_units: int = 15
    min_item_units: int = 8  # an item of fewer units is not matched (counted in stats: a few words are everywhere)
    seed_units: int = 5  # units of a seed: a stretch is looked at when it shares seeds with an item

    def __post_init__(self):
        if not 1 <= self.seed_units <= self.min_item_units <= min(self.exact_units, self.cjk_exact_units):
            raise ValueError(f"need 1 <= seed_units <= min_item_units <= exact_units and cjk_exact_units, got "
                             f"{self.seed_units}, {self.min_item_units}, {self.exact_units}, {self.cjk_exact_units}")


@dataclass
class BenchmarkIndex:
    benchmarks: list[str]  # names, in the order given
    item_benchmark: np.ndarray  # int32 [items]: its benchmark's position in `benchmarks`
    item_ids: list[str]
    units: np.ndarray  # uint32: every item's unit hashes, one item after another
    item_starts: np.ndarray  # int64 [items + 1]
    unit_starts_item: np.ndarray  # bool [units]: the unit is an item's first
    item_ngram: np.ndarray  # int32 [items]: units in a row that make an exact match (exact_units, or the whole item)
    item_cjk: np.ndarray  # bool [items]: mostly CJK characters (cjk_exact_units applies)
    item_short: np.ndarray  # bool [items]: shorter than its n-gram (matched whole and exactly only)
    seed: int
    table_fingerprint: np.ndarray  # uint32 [slots]: 0 for an empty slot
    table_group: np.ndarray  # int32 [slots]: the seed's group in group_starts
    group_starts: np.ndarray  # int64 [groups + 1]: each distinct seed's run in `places`
    places: np.ndarray  # int32: positions in `units`, grouped by seed
    too_short: dict[str, int]  # items left out by benchmark (under min_item_units)

    @property
    def items(self) -> int:
        return len(self.item_ids)

    def item_units(self, item: int) -> np.ndarray:
        return self.units[self.item_starts[item]:self.item_starts[item + 1]]

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.item_benchmark, self.units, self.item_starts, self.unit_starts_item,
                                      self.item_ngram, self.item_cjk,
                                      self.table_fingerprint, self.table_group, self.group_starts, self.places))


@kernel
def seed_hash(units, j, length):
    """The 64-bit hash of units[j:j + length]: a polynomial over the unit hashes, then splitmix64's finalizer
    (the table takes its slot from the low bits and its fingerprint from the high ones)."""
    h = np.uint64(0)
    for k in range(j, j + length):
        h = h * UNIT_BASE + np.uint64(units[k])
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


@kernel
def fingerprint(h):
    return np.uint32(h >> np.uint64(32)) | np.uint32(1)  # never 0: 0 marks an empty slot


@kernel
def _seeds_kernel(units, item_starts, length, hashes, places):
    n = 0
    for t in range(len(item_starts) - 1):
        for j in range(item_starts[t], item_starts[t + 1] - length + 1):
            hashes[n] = seed_hash(units, j, length)
            places[n] = j
            n += 1
    return n


@kernel
def _fill_table(group_hashes, fingerprints, groups):
    mask = np.uint64(len(fingerprints) - 1)
    for g in range(len(group_hashes)):
        h = group_hashes[g]
        slot = h & mask
        while fingerprints[slot] != 0:
            slot = (slot + np.uint64(1)) & mask
        fingerprints[slot] = fingerprint(h)
        groups[slot] = g


def build_index(items: list[tuple[str, str, str]], cfg: IndexConfig) -> BenchmarkIndex:
    """The index of (benchmark, item id, text) items; the benchmarks in order of first appearance."""
    benchmarks = list(dict.fromkeys(b for b, _, _ in items))
    position = {name: i for i, name in enumerate(benchmarks)}
    units = units_of([text for _, _, text in items])
    lengths = np.diff(units.starts)
    keep = lengths >= cfg.min_item_units
    too_short = {name: 0 for name in benchmarks}
    for (name, _, _), kept in zip(items, keep.tolist()):
        too_short[name] += not kept
    # the kept items' units, one after another
    chosen = np.flatnonzero(keep)
    item_starts = np.zeros(len(chosen) + 1, np.int64)
    np.cumsum(lengths[chosen], out=item_starts[1:])
    take = np.concatenate([np.arange(units.starts[i], units.starts[i + 1]) for i in chosen]) if len(chosen) else \
        np.zeros(0, np.int64)
    item_units = np.ascontiguousarray(units.hashes[take])
    cjk_share = np.add.reduceat(units.cjk[take].astype(np.int64), item_starts[:-1]) / lengths[chosen] if len(chosen) \
        else np.zeros(0)
    item_cjk = cjk_share > 0.5
    configured = np.where(item_cjk, cfg.cjk_exact_units, cfg.exact_units)
    item_short = lengths[chosen] < configured
    item_ngram = np.minimum(configured, lengths[chosen]).astype(np.int32)

    total = int((lengths[chosen] - cfg.seed_units + 1).sum())
    hashes, places = np.empty(total, np.uint64), np.empty(total, np.int32)
    _seeds_kernel(item_units, item_starts, cfg.seed_units, hashes, places)
    order = np.argsort(hashes, kind="stable")  # stable: places of one seed stay in item order
    hashes, places = hashes[order], places[order]
    first = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]]) if total else np.zeros(0, np.int64)
    group_starts = np.append(first, total).astype(np.int64)
    slots = 1 << max(4, int(2 * len(first)).bit_length())  # at most half full
    fingerprints, groups = np.zeros(slots, np.uint32), np.zeros(slots, np.int32)
    _fill_table(hashes[first], fingerprints, groups)
    unit_starts_item = np.zeros(len(item_units), np.bool_)
    unit_starts_item[item_starts[:-1][lengths[chosen] > 0]] = True
    return BenchmarkIndex(benchmarks, np.array([position[items[i][0]] for i in chosen], np.int32),
                          [items[i][1] for i in chosen], item_units, item_starts, unit_starts_item, item_ngram,
                          item_cjk, item_short,
                          cfg.seed_units, fingerprints, groups, group_starts, places, too_short)
