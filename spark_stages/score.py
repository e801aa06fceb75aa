"""The score stage: documents a tokenmill stage wrote (the clean job's), scored by classifiers and sorted by
their rules (prep/classify/scoring.py): the pipeline's quality step, once it has its classifier.

A task reads a file of documents, scores them, and writes the kept ones with their score_NAME (bucket_NAME
added once every document is scored: spark_stages/classifier_rules.py) to OUT/docs/ and those a rule
rejects to OUT/rejected/ with the reason classifier:NAME, in the file's order; OUT/stats.json counts them,
input = kept + rejected exactly. Documents the rules before rejected (the clean job's OUT/rejected/, given as
`rules_rejected`) are scored too and written as they were, reason and all, with their score_NAME to
OUT/rules_rejected/ (no rule of the classifier applies to them; `rules_rejected` in stats.json counts them):
every document then has its score, kept and rejected alike, as `clean.classifiers` gives it, so that a report
can show the good documents a rule threw away.
"""

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from prep.classify.scoring import Classifiers
from prep.ingest.inputs import InputError, InputFile, Sources, all_files
from prep.ingest.parquet_pages import row_group_pages
from prep.ingest.readers import rows_per_batch
from schemas import FORMAT_VERSION
from spark_stages import classifier_rules
from spark_stages.ingest import document_parquet, map_files
from spark_stages.outputs import checksums, commit, staging_dir
from spark_stages.task_outputs import TaskOutputs, fill_empty, prepare

RULES_REJECTED = "rules_rejected"
# a row per reason of a file's documents (None: kept); rules_rejected: the count of a file the rules rejected
COUNTS_SCHEMA = pa.schema([("reason", pa.string()), ("count", pa.int64()), ("rules_rejected", pa.bool_())])
BATCH_ROWS = 1024  # documents scored at a time, at most ...
BATCH_BYTES = 64 << 20  # ... and fewer where their text is larger (a dictionary's string repeated in every row)


def run(spark, sources: Sources, classifiers: Classifiers, out: str,
        rules_rejected: list[InputFile] | None = None) -> dict:
    started = time.time()
    files = all_files(sources)
    if not document_parquet(files) or (rules_rejected and not document_parquet(rules_rejected)):
        raise InputError("scoring reads documents a tokenmill stage wrote (Parquet with id and text)")
    read_schema = pq.read_schema(files[0].path)
    if clash := [column for column in classifiers.columns() if column in read_schema.names]:
        raise InputError(f"the documents already have a column {clash[0]}, which a classifier here writes (an "
                         "earlier run's classifier of the same name?): name this one otherwise")
    docs_schema = pa.schema(list(read_schema) + classifiers.fields())
    schemas = {"docs": docs_schema, "rejected": docs_schema.append(pa.field("reason", pa.string()))}
    if rules_rejected:
        schemas[RULES_REJECTED] = pa.schema(list(pq.read_schema(rules_rejected[0].path)) + classifiers.fields())
    outputs = list(schemas)
    staging = staging_dir(out)
    prepare(staging, schemas)
    shared = spark.sparkContext.broadcast(classifiers)
    first_rejected = len(files)  # the files from here on are the rules' rejected ones

    def score_files(mine):
        for index, file in mine:
            yield score_file(Path(file.path), index, shared.value, staging, schemas, index >= first_rejected)

    counts, scored_rejected = Counter(), 0
    for row in map_files(spark, files + list(rules_rejected or []), score_files, COUNTS_SCHEMA).collect():
        if row["rules_rejected"]:
            scored_rejected += row["count"]
        else:
            counts[row["reason"]] += row["count"]
    fill_empty(staging, schemas)
    ruled = classifier_rules.apply(spark, staging, classifiers.global_rules(), schemas["docs"], schemas["rejected"])
    for name, applied in ruled.items():
        counts[None] -= applied["rejected"]
        counts[f"classifier:{name}"] += applied["rejected"]
    rejected = {reason: n for reason, n in sorted(counts.items(), key=lambda kv: str(kv[0])) if reason and n}
    stats = {"format_version": FORMAT_VERSION, "input": sum(counts.values()), "kept": counts[None],
             "rejected": sum(rejected.values()), "rejected_by_reason": rejected, "classifiers": ruled,
             **({RULES_REJECTED: scored_rejected} if rules_rejected else {}),
             "files": len(files), "seconds": round(time.time() - started, 1),
             "checksums": checksums(spark, staging, outputs)}
    commit(staging, out, outputs, stats)
    return stats


def score_file(path: Path, index: int, classifiers: Classifiers, staging: Path, schemas: dict,
               rules_rejected: bool = False) -> pa.RecordBatch:
    """Runs in a task: one file's documents scored and written by fate; their counts by reason (None: kept).
    A file of documents the rules rejected is scored and written to rules_rejected whole, its count under None."""
    outputs = TaskOutputs(staging, schemas, index)
    counts = Counter()
    try:
        for batch in _batches(path):
            columns = classifiers.scores(batch.column("text").to_pylist())
            for name, values in columns.items():
                batch = batch.append_column(name, pa.array(values, schemas["docs"].field(name).type))
            if rules_rejected:
                counts[None] += batch.num_rows
                outputs.write(RULES_REJECTED, batch)
                continue
            reasons = [classifiers.rejection(columns, i) for i in range(batch.num_rows)]
            counts.update(reasons)
            rejected = pa.array([reason is not None for reason in reasons])
            outputs.write("docs", batch.filter(pc.invert(rejected)))
            gone = batch.filter(rejected)
            outputs.write("rejected", gone.append_column("reason", pa.array([r for r in reasons if r], pa.string())))
        outputs.close()
    except BaseException:
        outputs.abandon()
        raise
    return pa.RecordBatch.from_pylist([{"reason": r, "count": n, "rules_rejected": rules_rejected}
                                       for r, n in counts.items()], schema=COUNTS_SCHEMA)


def _batches(path: Path) -> Iterator[pa.RecordBatch]:
    """A file's documents in batches of BATCH_ROWS, or of about BATCH_BYTES by its row groups' sizes."""
    parquet = pq.ParquetFile(path)
    for group in range(parquet.metadata.num_row_groups):
        meta = parquet.metadata.row_group(group)
        rows = rows_per_batch(meta, row_group_pages(str(path), meta), BATCH_ROWS, BATCH_BYTES)
        yield from parquet.iter_batches(rows, [group], use_threads=False)


def summary(stats: dict) -> str:
    reasons = ", ".join(f"{reason} {n}" for reason, n in stats["rejected_by_reason"].items())
    also = f"; {stats[RULES_REJECTED]} the rules rejected scored too" if RULES_REJECTED in stats else ""
    return (f"scored {stats['input']}: kept {stats['kept']}, rejected {stats['rejected']}"
            f"{' (' + reasons + ')' if reasons else ''}{also} ({stats['seconds']} s)")
