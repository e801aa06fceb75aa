"""Where benchmark items occur in documents: exact runs of units, and stretches that align with an item
with a few words changed.

For each document (one compiled pass per batch, prep/decontam/units.py's units):
1. Every position's seed (`seed_units` units) is looked up in the index (prep/decontam/index.py); a hit names
   an item and the offset between the document and the item there (the diagonal).
2. Exact: from each hit the run of equal units is extended both ways along its diagonal; a run of at
   least the item's n-gram (13 words, 15 CJK characters, or the whole of a shorter item) is a match.
   Every place a seed occurs is tried, so an item sharing an n-gram with the document is always
   found (the seed is inside the n-gram).
3. Fuzzy: an item's hits are grouped by diagonal; a group with enough hits (`min_seeds`, and
   `seed_share` of the item's seeds: a long passage is not aligned for two common phrases) is
   aligned against the stretch of the document around it: the smallest edit distance (in units) of the
   item to any stretch there (Sellers' semi-global alignment), score = 1 - distance / item units. A
   score of at least `fuzzy_threshold` is a match: one word in eight replaced scores 0.875; ten words
   of a thirty-word item, 0.33. Items shorter than their n-gram are matched exactly only.
A fuzzy match that holds exact runs is one span, of kind exact.
"""

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prep.compiled import kernel
from prep.decontam.index import BenchmarkIndex, fingerprint, seed_hash
from prep.decontam.units import Units, units_of


@dataclass(frozen=True)
class MatchConfig:
    """When a stretch of a document is a benchmark item."""
    fuzzy: bool = True  # also find items with a few words changed (false: exact n-gram runs only)
    fuzzy_threshold: float = 0.8  # the alignment score (1 - edit distance / item units) of a fuzzy match
    min_seeds: int = 2  # seeds a stretch must share with an item before it is aligned
    seed_share: float = 0.1  # ... and at least this share of the item's seeds
    # A document's budget, its time and memory whatever the items (the sample's documents against 20,000 items
    # stay under 1% of each): the places of its seeds looked at, past which it is dropped (over_match_budget)
    max_seed_hits: int = 50_000_000
    max_hits: int = 2_000_000  # the runs of seed hits kept (16 bytes each), past which it is dropped too
    max_alignment_cells: int = 100_000_000  # cells of alignment, past which its matches are exact only

    def __post_init__(self):
        if not 0 < self.fuzzy_threshold <= 1 or self.min_seeds < 1 or not 0 <= self.seed_share <= 1:
            raise ValueError(f"need fuzzy_threshold in (0, 1], min_seeds >= 1, seed_share in [0, 1], got "
                             f"{self.fuzzy_threshold}, {self.min_seeds}, {self.seed_share}")
        if min(self.max_seed_hits, self.max_hits, self.max_alignment_cells) < 1:
            raise ValueError("max_seed_hits, max_hits and max_alignment_cells must be positive")


OVER_HITS, FUZZY_STOPPED = 2, 1  # a document's budget: went past max_seed_hits or max_hits; max_alignment_cells


@dataclass
class Spans:
    """Matches in a batch, by document then position; begin and end are characters of the original text."""
    doc: np.ndarray  # int64
    item: np.ndarray  # int64: the item's position in the index
    begin: np.ndarray  # int64
    end: np.ndarray  # int64
    score: np.ndarray  # float32: the alignment score (exact runs alone: the share of the item they cover)
    exact: np.ndarray  # bool: holds a run of the item's n-gram
    budget: np.ndarray  # int8 per document of the batch: 0, FUZZY_STOPPED or OVER_HITS (its spans unknown)

    def __len__(self) -> int:
        return len(self.doc)


def find_matches(texts: "list[str] | pa.StringArray", index: BenchmarkIndex, cfg: MatchConfig) -> Spans:
    units = units_of(texts)
    return spans_in(units, index, cfg)


def spans_in(units: Units, index: BenchmarkIndex, cfg: MatchConfig) -> Spans:
    fuzzy_ok = ~index.item_short & cfg.fuzzy
    found, score, budget = _match_kernel(
        units.hashes, units.starts, index.units, index.item_starts, index.unit_starts_item, index.item_ngram,
        fuzzy_ok, index.seed, index.table_fingerprint, index.table_group, index.group_starts, index.places,
        cfg.min_seeds, cfg.seed_share, cfg.fuzzy_threshold, int(np.diff(index.item_starts).max(initial=0)),
        cfg.max_seed_hits, cfg.max_hits, cfg.max_alignment_cells)
    doc, item, first_unit, end_unit, exact = found.T
    first = units.starts[doc]
    return Spans(doc, item, units.begin[first + first_unit], units.end[first + end_unit - 1], score,
                 exact.astype(bool), budget)


@kernel
def _align(item, doc, w0, w1, limit):
    """(distance, start, end): the smallest edit distance of `item` to a stretch doc[start:end] inside
    doc[w0:w1], or limit + 1 as soon as it must exceed `limit`."""
    width = w1 - w0
    prev_cost = np.zeros(width + 1, np.int32)
    prev_start = np.arange(w0, w1 + 1).astype(np.int64)
    cur_cost = np.empty(width + 1, np.int32)
    cur_start = np.empty(width + 1, np.int64)
    for i in range(1, len(item) + 1):
        cur_cost[0] = i
        cur_start[0] = w0
        a = item[i - 1]
        row_min = i
        for j in range(1, width + 1):
            best = prev_cost[j - 1] + (0 if a == doc[w0 + j - 1] else 1)
            start = prev_start[j - 1]
            if prev_cost[j] + 1 < best:
                best = prev_cost[j] + 1
                start = prev_start[j]
            if cur_cost[j - 1] + 1 < best:
                best = cur_cost[j - 1] + 1
                start = cur_start[j - 1]
            cur_cost[j] = best
            cur_start[j] = start
            row_min = min(row_min, best)
        if row_min > limit:  # a row's minimum never falls in later rows
            return limit + 1, w0, w0
        prev_cost, cur_cost = cur_cost, prev_cost
        prev_start, cur_start = cur_start, prev_start
    end = np.argmin(prev_cost)
    return prev_cost[end], prev_start[end], w0 + end


@kernel
def _grown(array, size):
    bigger = np.empty(max(2 * len(array), size), array.dtype)
    bigger[:len(array)] = array
    return bigger


@kernel
def _room(out, score, found):
    """The span arrays with room for one more."""
    if found < len(score):
        return out, score
    bigger = np.empty((2 * found, out.shape[1]), out.dtype)
    bigger[:found] = out
    return bigger, _grown(score, 2 * found)


@kernel
def _seed_hits(doc, item_units, unit_starts_item, seed, table_fingerprint, table_group, group_starts, places,
               max_seed_hits, max_hits, hit_place, hit_pos):
    """The document's seed hits (place in the items' units, position in the document), each the start of a run
    along its diagonal: a hit whose diagonal goes on from the previous position's is part of that hit's run (a
    text repeated a thousand times is a thousand hits, not a thousand times its length in each). Returns the
    arrays (grown as needed), the number of hits, and False where the document went past max_seed_hits
    looked at or max_hits kept."""
    mask = np.uint64(len(table_fingerprint) - 1)
    hits, seen = 0, 0
    for j in range(len(doc) - seed + 1):
        h = seed_hash(doc, j, seed)
        slot = h & mask
        fp = fingerprint(h)
        while table_fingerprint[slot] != 0:
            if table_fingerprint[slot] == fp:
                g = table_group[slot]
                seen += group_starts[g + 1] - group_starts[g]
                if seen > max_seed_hits:
                    return hit_place, hit_pos, hits, False
                for q in range(group_starts[g], group_starts[g + 1]):
                    p = places[q]
                    if j > 0 and not unit_starts_item[p] and item_units[p - 1] == doc[j - 1]:
                        continue  # the run of the hit at (j - 1, p - 1)
                    if hits == len(hit_place):
                        if hits >= max_hits:
                            return hit_place, hit_pos, hits, False
                        hit_place = _grown(hit_place, hits + 1)
                        hit_pos = _grown(hit_pos, hits + 1)
                    hit_place[hits] = p
                    hit_pos[hits] = j
                    hits += 1
                break
            slot = (slot + np.uint64(1)) & mask
    return hit_place, hit_pos, hits, True


@kernel
def _match_kernel(units, starts, item_units, item_starts, unit_starts_item, item_ngram, fuzzy_ok, seed,
                  table_fingerprint, table_group, group_starts, places, min_seeds, seed_share, threshold, longest,
                  max_seed_hits, max_hits, max_alignment_cells):
    hit_place = np.empty(1024, np.int64)
    hit_pos = np.empty(1024, np.int64)
    out = np.empty((16, 5), np.int64)  # doc, item, first unit, end unit, exact
    out_score = np.empty(16, np.float32)
    found = 0
    budget = np.zeros(len(starts) - 1, np.int8)  # per document: OVER_HITS, or FUZZY_STOPPED
    run_begin = np.empty(64, np.int64)
    run_end = np.empty(64, np.int64)
    run_used = np.empty(64, np.bool_)
    for d in range(len(starts) - 1):
        doc = units[starts[d]:starts[d + 1]]
        size = len(doc)
        hit_place, hit_pos, hits, within = _seed_hits(  # 1. seeds
            doc, item_units, unit_starts_item, seed, table_fingerprint, table_group, group_starts, places,
            max_seed_hits, max_hits, hit_place, hit_pos)
        if not within:
            budget[d] = OVER_HITS
            continue
        if hits == 0:
            continue
        hit_item = np.searchsorted(item_starts, hit_place[:hits], side="right") - 1
        diagonal = hit_pos[:hits] - (hit_place[:hits] - item_starts[hit_item])
        by_diagonal = np.argsort((diagonal + longest) * (size + 1) + hit_pos[:hits], kind="mergesort")
        order = by_diagonal[np.argsort(hit_item[by_diagonal], kind="mergesort")]  # by item, diagonal, position
        weight = np.empty(hits, np.int64)  # seeds in the run from each hit on (the hits it stands for)
        cells = 0
        a = 0
        while a < hits:
            t = hit_item[order[a]]
            c = a
            while c < hits and hit_item[order[c]] == t:
                c += 1
            item = item_units[item_starts[t]:item_starts[t + 1]]
            length = len(item)
            runs = 0
            last_diagonal, last_end = -(1 << 62), -1
            for k in range(a, c):  # 2. exact runs, once per run
                x = order[k]
                j, p = hit_pos[x], hit_place[x] - item_starts[t]
                j0, p0, j1, p1 = j, p, j, p
                while j1 < size and p1 < length and doc[j1] == item[p1]:
                    j1 += 1
                    p1 += 1
                weight[x] = max(1, j1 - j - seed + 1)
                if diagonal[x] == last_diagonal and j < last_end:
                    continue
                while j0 > 0 and p0 > 0 and doc[j0 - 1] == item[p0 - 1]:
                    j0 -= 1
                    p0 -= 1
                last_diagonal, last_end = diagonal[x], max(j1, j + 1)
                if j1 - j0 >= item_ngram[t]:
                    if runs == len(run_begin):
                        run_begin = _grown(run_begin, runs + 1)
                        run_end = _grown(run_end, runs + 1)
                        run_used = _grown(run_used, runs + 1)
                    run_begin[runs], run_end[runs], run_used[runs] = j0, j1, False
                    runs += 1
            if fuzzy_ok[t]:  # 3. groups of hits by diagonal, aligned
                slack = length // 4 + 2
                needed = max(min_seeds, int(np.ceil(seed_share * (length - seed + 1))))
                limit = int(np.floor((1.0 - threshold) * length + 1e-9))
                k = a
                while k < c:
                    first_diagonal = diagonal[order[k]]
                    e = k + 1
                    seeds = weight[order[k]]
                    while (e < c and diagonal[order[e]] - diagonal[order[e - 1]] <= slack
                           and diagonal[order[e]] - first_diagonal <= length):
                        seeds += weight[order[e]]
                        e += 1
                    if seeds >= needed:
                        w0 = max(0, first_diagonal - slack)
                        w1 = min(size, diagonal[order[e - 1]] + length + slack)
                        cells += length * (w1 - w0)
                        if cells > max_alignment_cells:  # exact runs only from here on
                            budget[d] = FUZZY_STOPPED
                        else:
                            distance, s0, s1 = _align(item, doc, w0, w1, limit)
                            if distance <= limit and s1 > s0:
                                is_exact = False
                                for r in range(runs):
                                    if run_begin[r] < s1 and run_end[r] > s0:
                                        s0, s1 = min(s0, run_begin[r]), max(s1, run_end[r])
                                        run_used[r] = True
                                        is_exact = True
                                out, out_score = _room(out, out_score, found)
                                out[found, 0], out[found, 1], out[found, 2], out[found, 3] = d, t, s0, s1
                                out[found, 4] = 1 if is_exact else 0
                                out_score[found] = 1.0 - distance / length
                                found += 1
                    k = e
            for r in range(runs):  # exact runs no alignment took in
                if run_used[r]:
                    continue
                out, out_score = _room(out, out_score, found)
                out[found, 0], out[found, 1], out[found, 2], out[found, 3] = d, t, run_begin[r], run_end[r]
                out[found, 4] = 1
                out_score[found] = (run_end[r] - run_begin[r]) / length
                found += 1
            a = c
    return out[:found], out_score[:found], budget
