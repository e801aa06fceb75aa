"""The classifiers' rules over the whole corpus (prep/classify/scoring.py): `keep_top`, the best share of the
documents by score, and `buckets`, each document's score quantile; applied to a stage's staged documents
once every one is scored.

Exact, not approximate: each document's key is its score's 32 bits (a float's bits order as it does, for
scores of 0 to 1) above 32 bits of a hash of its id, and the thresholds are the keys of the documents at the
ranks the rules name, found by a radix select: four passes of 16 bits, each a Spark job that counts, in
every file, the keys still in the running by their next 16 bits (at most a 65,536-bin histogram per
threshold reaches the driver, whatever the corpus). The same documents are chosen on any partitioning;
documents with the same score and id hash share their fate (a few in billions).

Then a task per file of documents rewrites it where it is: the documents under a keep_top threshold move
to the rejected documents (reason `classifier:NAME`), the others get `bucket_NAME`.
"""

import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from prep.classify.scoring import ClassifierConfig, bucket_column, score_column
from prep.ingest.inputs import InputFile
from spark_stages.ingest import map_files
from spark_stages.task_outputs import TaskOutputs, fill_empty, prepare

PASSES, DIGIT_BITS = 4, 16
COUNTS_SCHEMA = pa.schema([("threshold", pa.int64()), ("digit", pa.int64()), ("count", pa.int64())])
CLASSIFIED = "_classified"  # the rewritten files, in staging, before they replace the stage's own
NONE = 2**64 - 1  # a threshold no document reaches (no score's bits are all ones)


def keys(table: pa.Table, name: str) -> np.ndarray:
    """uint64 per document: its score_NAME's bits, then 32 bits of its id's hash."""
    scores = np.nan_to_num(table.column(score_column(name)).to_numpy(zero_copy_only=False).astype(np.float32))
    bits = np.maximum(scores, np.float32(0)).view(np.uint32).astype(np.uint64)
    ids = np.fromiter((xxhash.xxh64_intdigest(i) & 0xFFFFFFFF for i in table.column("id").to_pylist()),
                      np.uint64, table.num_rows)
    return (bits << np.uint64(32)) | ids


def apply(spark, staging: Path, rules: dict[str, ClassifierConfig], docs_schema: pa.Schema,
          rejected_schema: pa.Schema) -> dict[str, dict]:
    """Applies `rules` to staging/docs (rewriting it, and adding to staging/rejected); returns each rule's
    thresholds and counts (nothing is read without a rule)."""
    if not rules:
        return {}
    files = sorted(str(p) for p in (staging / "docs").glob("part-*.parquet"))
    top = {name: cfg.keep_top for name, cfg in rules.items() if cfg.keep_top is not None}
    thresholds = {name: _at_ranks(spark, files, name, lambda n, share=share: [n - kept_of(share, n)], {})
                  for name, share in top.items()}
    kept_above = {name: t[0] for name, t in thresholds.items()}
    buckets = {name: cfg.buckets for name, cfg in rules.items() if cfg.buckets}
    edges = {name: _at_ranks(spark, files, name, lambda n, b=b: [k * n // b for k in range(1, b)], kept_above)
             for name, b in buckets.items()}
    out_schema = pa.schema(list(docs_schema) + [pa.field(bucket_column(name), pa.int32()) for name in buckets])
    (staging / CLASSIFIED).mkdir()
    prepare(staging / CLASSIFIED, {"docs": out_schema, "rejected": rejected_schema})

    def rewrite(mine):
        for index, file in mine:
            yield _rewrite(Path(file.path), index, staging, kept_above, edges, out_schema, rejected_schema)

    moved = {}
    for row in map_files(spark, [InputFile(f, f) for f in files], rewrite, MOVED_SCHEMA).collect():
        moved[row["classifier"]] = moved.get(row["classifier"], 0) + row["count"]
    fill_empty(staging / CLASSIFIED, {"docs": out_schema})
    _swap(staging)
    return {name: {"keep_top": top.get(name), "threshold_key": kept_above.get(name), "rejected": moved.get(name, 0),
                   "buckets": buckets.get(name, 0), "bucket_edges": edges.get(name, [])} for name in rules}


def kept_of(share: float, documents: int) -> int:
    """How many of `documents` keep_top `share` keeps: the share of them rounded to the nearest, a half up
    (Python's round() takes halves to even: 0.5 kept 0 of 1 and 2 of 5)."""
    return int(Fraction(share) * documents + Fraction(1, 2))


MOVED_SCHEMA = pa.schema([("classifier", pa.string()), ("count", pa.int64())])


def _at_ranks(spark, files: list[str], name: str, ranks_of, kept_above: dict) -> list[int]:
    """The keys at the ranks `ranks_of(documents)` names (ascending, 0 the lowest) among the documents whose
    keys are at least kept_above's thresholds (a document under a keep_top threshold is not counted); NONE
    for a rank past the last document."""
    documents = int(_histograms(spark, files, name, [(0, 64)], 0, kept_above, total=True).sum())
    ranks = ranks_of(documents)
    found = [[0, r] for r in ranks if r < documents]  # per rank: the key's bits found so far, the rank among them
    for step in range(PASSES if found else 0):
        shift = 64 - DIGIT_BITS * (step + 1)
        prefixes = sorted({prefix for prefix, _ in found})
        histograms = _histograms(spark, files, name, [(p, shift + DIGIT_BITS) for p in prefixes], shift, kept_above)
        for entry in found:
            cumulative = np.cumsum(histograms[prefixes.index(entry[0])])
            digit = int(np.searchsorted(cumulative, entry[1], side="right"))
            entry[1] -= int(cumulative[digit - 1]) if digit else 0
            entry[0] = (entry[0] << DIGIT_BITS) | digit
    keys_found = iter(prefix for prefix, _ in found)
    return [next(keys_found) if r < documents else NONE for r in ranks]


def _histograms(spark, files, name, prefixes, shift, kept_above, total=False) -> np.ndarray:
    """Per (prefix, at) of `prefixes`: the counts of the next 16 bits below `shift` of the keys whose bits
    above `at` are that prefix (total: one count of every key)."""
    width = 1 if total else 1 << DIGIT_BITS

    def count(mine):
        for _, file in mine:
            table = pq.read_table(file.path, columns=["id", *{score_column(n) for n in [name, *kept_above]}])
            ok = np.ones(table.num_rows, bool)
            for other, threshold in kept_above.items():
                ok &= keys(table, other) >= np.uint64(threshold)
            found = keys(table, name)[ok]
            rows = []
            for t, (prefix, at) in enumerate(prefixes):
                chosen = found if at >= 64 else found[(found >> np.uint64(at)) == np.uint64(prefix)]
                digits = np.zeros(len(chosen), np.int64) if total else (
                    (chosen >> np.uint64(shift)) & np.uint64(width - 1)).astype(np.int64)
                values, n = np.unique(digits, return_counts=True)
                rows += [{"threshold": t, "digit": int(v), "count": int(c)} for v, c in zip(values, n)]
            yield pa.RecordBatch.from_pylist(rows, schema=COUNTS_SCHEMA)

    out = np.zeros((len(prefixes), width), np.int64)
    for row in map_files(spark, [InputFile(f, f) for f in files], count, COUNTS_SCHEMA).collect():
        out[row["threshold"], row["digit"]] += row["count"]
    return out


def _rewrite(path: Path, index: int, staging: Path, kept_above: dict, edges: dict, out_schema: pa.Schema,
             rejected_schema: pa.Schema) -> pa.RecordBatch:
    """Runs in a task: one file of documents rewritten (CLASSIFIED), those under a keep_top threshold moved
    out (the first classifier in the configuration's order is the reason); their counts by classifier."""
    table = pq.read_table(path)
    reason = [None] * table.num_rows
    for name, threshold in kept_above.items():
        for i in np.flatnonzero(keys(table, name) < np.uint64(threshold)).tolist():
            reason[i] = reason[i] or f"classifier:{name}"
    for name, cut in edges.items():
        bucket = np.searchsorted(np.array(cut, np.uint64), keys(table, name), side="right").astype(np.int32)
        table = table.append_column(bucket_column(name), pa.array(bucket))
    moved = pa.array([r is not None for r in reason])
    outputs = TaskOutputs(staging / CLASSIFIED, {"docs": out_schema, "rejected": rejected_schema}, index)
    try:
        for batch in table.filter(pc.invert(moved)).to_batches():
            outputs.write("docs", batch)
        gone = table.filter(moved).append_column("reason", pa.array([r for r in reason if r], pa.string()))
        for batch in gone.to_batches():
            outputs.write("rejected", batch)
        outputs.close()
    except BaseException:
        outputs.abandon()
        raise
    names = [r.split(":", 1)[1] for r in reason if r]
    return pa.RecordBatch.from_pylist([{"classifier": n, "count": names.count(n)} for n in sorted(set(names))],
                                      schema=MOVED_SCHEMA)


def _swap(staging: Path) -> None:
    """The rewritten documents replace the stage's; the moved ones join its rejected documents, after them."""
    classified = staging / CLASSIFIED
    for old in (staging / "docs").glob("part-*.parquet"):
        old.unlink()
    for new in (classified / "docs").glob("part-*.parquet"):
        os.replace(new, staging / "docs" / new.name)
    for moved in sorted((classified / "rejected").glob("part-*.parquet")):
        os.replace(moved, staging / "rejected" / f"part-9{moved.name[len('part-'):]}")
    for leftover in sorted(classified.rglob("*"), reverse=True):
        leftover.rmdir() if leftover.is_dir() else leftover.unlink()
    classified.rmdir()
