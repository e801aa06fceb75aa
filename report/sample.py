"""What is kept of an output as it streams by, in bounded memory: per key, the documents of the smallest id
hashes (already cut to what is shown), and the distributions of lengths, languages and classifier scores."""

import heapq
import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from report.scan import id_hash

LENGTH_EDGES = (0, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)  # characters
SCORE_BINS = 20
SCORE_PREFIX, BUCKET_PREFIX = "score_", "bucket_"
# a language or bucket value is a short name; an output from elsewhere may hold a megabyte, or a million of them
VALUE_CHARS, MAX_VALUES = 60, 1_000
OTHER_VALUES = "(other values)"


class Smallest:
    """Per key, the `k` rows of the smallest id hashes seen, each made into what is shown (`make`) when it
    enters, so that a long document is never held whole. Rows that share an id (a crawl read twice) are told
    apart by the order they were read in: the shown objects are never compared. With `keys`, rows of other
    keys are passed over: an output from elsewhere held 400,000 reasons, one heap each (700 MB), of which the
    page lists 60."""

    def __init__(self, k: int, make: Callable[[dict], object], keys: set[str] | None = None):
        self.k, self.make, self.keys = k, make, keys
        self.heaps: dict[str, list] = {}
        self.offered = 0

    def offer(self, table: pa.Table, keys: list | None = None) -> None:
        if self.k == 0 or table.num_rows == 0:
            return
        ids = table.column("id").to_pylist() if "id" in table.column_names else [None] * table.num_rows
        keys = keys if keys is not None else [""] * table.num_rows
        for i, (doc_id, key) in enumerate(zip(ids, keys)):
            if self.keys is not None and key not in self.keys:
                continue
            heap = self.heaps.setdefault(key, [])
            h = id_hash(doc_id)
            self.offered += 1
            if len(heap) < self.k or -heap[0][0] > h:  # the first read of a tie stays: -offered
                item = (-h, doc_id or "", -self.offered, self.make(table.slice(i, 1).to_pylist()[0]))
                (heapq.heapreplace if len(heap) == self.k else heapq.heappush)(heap, item)

    def get(self, key: str = "") -> list:
        """The key's shown rows, the smallest hash first."""
        return [made for _, _, _, made in sorted(self.heaps.get(key, []), key=lambda e: (-e[0], e[1], -e[2]))]


class Distributions:
    """Lengths, languages, text bytes and classifier scores of the rows read."""

    def __init__(self):
        self.rows = 0
        self.text_bytes = 0
        self.lengths = np.zeros(len(LENGTH_EDGES), np.int64)
        self.languages: Counter = Counter()
        self.scores: dict[str, np.ndarray] = {}
        self.buckets: dict[str, Counter] = {}

    def add(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        if "text" in table.column_names:
            text = table.column("text")
            self.text_bytes += int(pc.sum(pc.binary_length(text)).as_py() or 0)
            chars = pc.fill_null(pc.utf8_length(text), 0).to_numpy(zero_copy_only=False)
            self.lengths += np.bincount(np.searchsorted(LENGTH_EDGES, chars, side="right") - 1,
                                        minlength=len(LENGTH_EDGES))
        if "lang" in table.column_names:
            _count(self.languages, table.column("lang"))
        for name in table.column_names:
            if name.startswith(SCORE_PREFIX):
                values = pc.fill_null(table.column(name).cast(pa.float64()), math.nan).to_numpy(zero_copy_only=False)
                counts, _ = np.histogram(values[~np.isnan(values)], bins=SCORE_BINS, range=(0, 1))
                self.scores[name] = self.scores.get(name, np.zeros(SCORE_BINS, np.int64)) + counts
            elif name.startswith(BUCKET_PREFIX):
                _count(self.buckets.setdefault(name, Counter()), table.column(name))


def _count(counter: Counter, column) -> None:
    """The column's values counted, each clipped to VALUE_CHARS; past MAX_VALUES distinct ones, a new value is
    counted among OTHER_VALUES."""
    for entry in pc.value_counts(column).to_pylist():
        value = entry["values"]
        value = "?" if value is None or value == "" else str(value)[:VALUE_CHARS]
        if value not in counter and len(counter) >= MAX_VALUES:
            value = OTHER_VALUES
        counter[value] += entry["counts"]


def length_labels() -> list[str]:
    def short(n: int) -> str:
        return f"{n // 1000}k" if n >= 1000 else str(n)
    return [f"{short(a)}-{short(b)}" for a, b in zip(LENGTH_EDGES, LENGTH_EDGES[1:])] + [f"≥{short(LENGTH_EDGES[-1])}"]


def score_labels() -> list[str]:
    return [f"{i / SCORE_BINS:.2f}" for i in range(SCORE_BINS)]
