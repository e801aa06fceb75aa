"""Decontamination of a batch of documents: matches found, cut out, and each document kept or dropped.

A document without a match comes out as it went in, byte for byte (its value is never rebuilt). One
with matches loses each matched span and its window (prep/decontam/cut.py) and is kept, unless it had
more than `max_spans` matches (too_many_matches), is left with fewer than `min_chars` characters
(too_short_after_removal), or, looked at again after the cut, still holds a match
(matches_left_after_removal: the pieces either side of a cut can meet to form an item's n-gram). A document
that goes past its matching budget (prep/decontam/match.py: a text repeating what many items share) is
dropped (over_match_budget); one that goes past its budget of alignments keeps the exact matches found and
is kept with the note fuzzy_over_budget.
"""

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from prep.decontam.cut import CutConfig, cut_ranges, without
from prep.decontam.index import BenchmarkIndex, IndexConfig
from prep.decontam.items import ItemsConfig
from prep.decontam.match import FUZZY_STOPPED, OVER_HITS, MatchConfig, find_matches
from schemas.documents import INTERNAL

SPAN_TYPE = pa.struct([("benchmark", pa.string()), ("item", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                       ("score", pa.float32()), ("kind", pa.string())])
# Columns added to the documents' own while the stage sorts them out (named as no input's can be: INTERNAL)
STATUS, REASON, SPANS, CHARS_REMOVED = (INTERNAL + name for name in ("status", "reason", "spans", "chars_removed"))
RESULT_FIELDS = [pa.field(STATUS, pa.string(), False), pa.field(REASON, pa.string()),
                 pa.field(SPANS, pa.list_(SPAN_TYPE), False), pa.field(CHARS_REMOVED, pa.int64(), False)]


@dataclass(frozen=True)
class DecontamConfig:
    """What benchmark items are, how they are matched and what a match removes."""
    items: ItemsConfig = field(default_factory=ItemsConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    match: MatchConfig = field(default_factory=MatchConfig)
    cut: CutConfig = field(default_factory=CutConfig)


def result_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema(list(schema) + RESULT_FIELDS)


def decontaminate_batch(batch: pa.RecordBatch, index: BenchmarkIndex, cfg: DecontamConfig) -> pa.RecordBatch:
    """The batch's columns (text cut where it matched) and RESULT_FIELDS."""
    texts = batch.column("text")
    spans = find_matches(texts, index, cfg.match)
    rows = batch.num_rows
    status, reason = ["kept"] * rows, [None] * rows
    span_lists: list[list[dict]] = [[] for _ in range(rows)]
    removed = np.zeros(rows, np.int64)
    changed: dict[int, str] = {}
    for d in np.flatnonzero(spans.budget == FUZZY_STOPPED).tolist():
        reason[d] = "fuzzy_over_budget"
    for d in np.flatnonzero(spans.budget == OVER_HITS).tolist():
        status[d], reason[d] = "dropped", "over_match_budget"
    for d in np.unique(spans.doc).tolist():
        mine = np.flatnonzero(spans.doc == d)
        # copies of one item (a benchmark listing it twice, a file given under two names) match one place: they
        # had counted a span each, and a document quoting an item listed 11 times was dropped
        too_many = len(set(zip(spans.begin[mine].tolist(), spans.end[mine].tolist()))) > cfg.cut.max_spans
        if too_many:
            mine = mine[:cfg.cut.max_spans + 1]  # a document dropped for its matches is shown the first of them
        span_lists[d] = [{"benchmark": index.benchmarks[index.item_benchmark[spans.item[k]]],
                          "item": index.item_ids[spans.item[k]], "start": int(spans.begin[k]), "end": int(spans.end[k]),
                          "score": float(spans.score[k]), "kind": "exact" if spans.exact[k] else "fuzzy"}
                         for k in mine.tolist()]
        text = texts[d].as_py()
        ranges = cut_ranges(text, [(s["start"], s["end"]) for s in span_lists[d]], cfg.cut.window)
        removed[d] = sum(e - b for b, e in ranges)
        if status[d] == "dropped":
            continue
        if too_many:
            status[d], reason[d] = "dropped", "too_many_matches"
        elif len(left := without(text, ranges)) < cfg.cut.min_chars:
            status[d], reason[d] = "dropped", "too_short_after_removal"
        else:
            changed[d] = left
    if changed:
        cut = list(changed)
        again = find_matches(list(changed.values()), index, cfg.match)
        for k in np.unique(again.doc).tolist():
            status[cut[k]], reason[cut[k]] = "dropped", "matches_left_after_removal"
            del changed[cut[k]]
        for k in np.flatnonzero(again.budget == OVER_HITS).tolist():
            if cut[k] in changed:
                status[cut[k]], reason[cut[k]] = "dropped", "over_match_budget"
                del changed[cut[k]]
    if changed:
        mask = np.zeros(rows, np.bool_)
        mask[list(changed)] = True
        texts = pc.replace_with_mask(texts, pa.array(mask), pa.array([changed[d] for d in sorted(changed)], texts.type))
    columns = [texts if name == "text" else batch.column(name) for name in batch.schema.names]
    extra = [pa.array(status, pa.string()), pa.array(reason, pa.string()), pa.array(span_lists, pa.list_(SPAN_TYPE)),
             pa.array(removed)]
    return pa.RecordBatch.from_arrays(columns + extra, schema=result_schema(batch.schema))
