"""The cleaning stage: raw text in, cleaned documents, rejections and quarantine out.

Writes OUT/docs/ (kept, cleaned, with lang), OUT/rejected/ (with reason), OUT/quarantine/ (with
error, file, line, raw), OUT/normalized/ (what normalization changed in a sample of the documents, for the
report), OUT/report.md and OUT/stats.json, where input == kept + rejected + quarantined.
"""

import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import xxhash
from pyspark import TaskContext

from prep.arrow_rows import rows_to_batch
from prep.classify.scoring import Classifiers
from prep.clean import CleanConfig, clean_batch
from prep.ingest.inputs import InputFile, Sources, all_files
from prep.ingest.records import read_records
from prep.normalize import changes, normalize
from prep.quality.url_filter import UrlFilter
from schemas import CLEAN_DOCUMENT_SCHEMA, FORMAT_VERSION, QUARANTINE_SCHEMA, REJECTED_SCHEMA
from schemas.documents import NORMALIZED_SCHEMA
from spark_stages import classifier_rules
from spark_stages.ingest import (
    PARTITION_BYTES,
    check_partitions,
    default_partitions,
    estimated_bytes,
    map_files,
    read_input,
)
from spark_stages.outputs import checksums, commit, staging_dir
from spark_stages.reports import removal_report
from spark_stages.runner import Stage
from spark_stages.session import ARROW_BATCH_RECORDS, session_conf, spark_schema
from spark_stages.task_outputs import TaskOutputs, fill_empty, prepare

log = logging.getLogger(__name__)

OUTPUTS = {"docs": ("kept", CLEAN_DOCUMENT_SCHEMA), "rejected": ("rejected", REJECTED_SCHEMA),
           "quarantine": ("quarantined", QUARANTINE_SCHEMA)}
OUTPUT_SCHEMAS = {name: schema for name, (_, schema) in OUTPUTS.items()}
ALL_OUTPUTS = [*OUTPUTS, "normalized"]


@dataclass
class Config(CleanConfig):
    """The cleaning rules (prep/clean.py), and how the job spreads the work."""
    # cleaning tasks, the records spread over them by a shuffle (default: a task per input file when the
    # files are many and none large, else from the input size, at least 8: cleaned_where_read)
    partitions: int | None = None
    # Documents per Arrow batch a Python worker cleans, for this stage only (default: the session's
    # spark.sql.execution.arrow.maxRecordsPerBatch, 1,000 unless --conf says otherwise): a worker holds
    # about one batch. At 157 MB Spark's own 10,000 cost 145 MB more a worker and 20% more time.
    batch_records: int | None = None
    # the share of documents (by a hash of their id, the same in every run) whose normalization changes are
    # written to OUT/normalized/ (the first few of each, with the text around them) for the report
    normalized_share: float = 0.01

    def __post_init__(self):
        super().__post_init__()
        if self.batch_records is not None and self.batch_records < 1:
            raise ValueError(f"batch_records must be at least 1, got {self.batch_records}")
        check_partitions(self.partitions)
        if not 0 <= self.normalized_share <= 1:
            raise ValueError(f"normalized_share must be in [0, 1], got {self.normalized_share}")


def run(spark, sources: Sources, cfg: Config, out: str) -> dict:
    """Reads every source's files, cleans them with `cfg` and writes them together; returns the stats
    (also OUT/stats.json). The pipeline cleans each source alone, with its own settings."""
    started = time.time()
    files = all_files(sources)
    staging = staging_dir(out)
    classifiers = Classifiers(cfg.classifiers)  # the models read here, once, and checked
    schemas = output_schemas(classifiers)
    prepare(staging, schemas)
    blocked = spark.sparkContext.broadcast(UrlFilter(cfg.url_filter))  # the lists read here, once
    models = spark.sparkContext.broadcast(classifiers)
    batch_records = cfg.batch_records or int(spark.conf.get(ARROW_BATCH_RECORDS))

    def clean_and_write(batches):
        yield clean_task(batches, cfg, blocked.value, staging, TaskContext.get().partitionId(), models.value)

    if cleaned_where_read(files, cfg):
        tasks = map_files(spark, files, lambda mine: clean_and_write(read_records(mine, cfg.reader, batch_records)),
                          TASK_SCHEMA).collect()
    else:
        # Spread the records evenly, whatever the sizes of the files, then sort each partition by input
        # position, so the output is the same on any number of cores.
        position = ["file_index", "record_index"]
        partitions = cfg.partitions or default_partitions(files)
        spread = read_input(spark, files, cfg.reader).repartition(partitions, *position).sortWithinPartitions(*position)
        with session_conf(spark, {ARROW_BATCH_RECORDS: str(batch_records)}, override=True):
            tasks = spread.mapInArrow(clean_and_write, spark_schema(TASK_SCHEMA)).collect()
    fill_empty(staging, schemas)
    ruled = classifier_rules.apply(spark, staging, classifiers.global_rules(), schemas["docs"], schemas["rejected"])
    return _write(spark, tasks, files, staging, out, started, ruled)


def output_schemas(classifiers: Classifiers) -> dict[str, pa.Schema]:
    """The outputs' schemas, with the classifiers' columns on the documents kept and rejected."""
    extra = classifiers.fields()
    return {**{name: pa.schema(list(schema) + extra) if name != "quarantine" else schema
               for name, schema in OUTPUT_SCHEMAS.items()}, "normalized": NORMALIZED_SCHEMA}


def cleaned_where_read(files: list[InputFile], cfg: Config) -> bool:
    """Whether each task cleans the records of the files it reads (a task per file, no shuffle): when
    the input has at least as many files as the job makes tasks and none is much larger than a task's
    share (PARTITION_BYTES), unless `partitions` asks for a number of tasks. Else the records are spread
    over the tasks by a shuffle first. Both decided by the input alone, never by the cores."""
    if cfg.partitions is not None or not files:
        return False
    return len(files) >= default_partitions(files) and max(map(estimated_bytes, files)) <= 2 * PARTITION_BYTES


# What a cleaning task returns: its records counted by (status, reason), and a row (count 1, with its
# file and message) per damaged file or ignored bytes.
TASK_SCHEMA = pa.schema([("status", pa.string()), ("reason", pa.string()), ("count", pa.int64()),
                         ("file", pa.string()), ("error", pa.string()), ("record_index", pa.int64())])
PROBLEMS = ("file_error", "file_warning")


def clean_task(batches, cfg: Config, url_filter: UrlFilter, staging: Path, partition: int,
               classifiers: Classifiers) -> pa.RecordBatch:
    """Runs in a task: cleans its READ_SCHEMA batches (scored by the classifiers), writes them by status into
    the task's own files of the outputs (spark_stages/task_outputs.py) and returns what the stats need
    (TASK_SCHEMA)."""
    outputs = TaskOutputs(staging, output_schemas(classifiers), partition)
    counts: Counter = Counter()
    problems: list[dict] = []
    try:
        for batch in batches:
            outputs.write("normalized", normalization_changes(batch, cfg))
            result = clean_batch(batch, cfg, url_filter, classifiers)
            status = result.column("status")
            for name, (wanted, _) in OUTPUTS.items():
                outputs.write(name, result.filter(pc.equal(status, wanted)))
            counts.update(pair for pair in zip(status.to_pylist(), result.column("reason").to_pylist())
                          if pair[0] not in PROBLEMS)
            problem = pc.is_in(status, pa.array(PROBLEMS))
            if pc.any(problem).as_py():
                problems += result.filter(problem).select(["status", "file", "error", "record_index"]).to_pylist()
        outputs.close()
    except BaseException:
        outputs.abandon()
        raise
    rows = [{"status": status, "reason": reason, "count": n} for (status, reason), n in counts.items()]
    return pa.RecordBatch.from_pylist(rows + [{**p, "count": 1} for p in problems], schema=TASK_SCHEMA)


def in_sample(doc_id: str, share: float) -> bool:
    """Whether a document is in the share whose normalization changes are written: by a hash of its id."""
    return xxhash.xxh3_64_intdigest(doc_id.encode("utf-8", "surrogatepass")) % 1_000_000 < share * 1_000_000


def normalization_changes(batch: pa.RecordBatch, cfg: Config) -> pa.RecordBatch:
    """NORMALIZED_SCHEMA rows: what normalization changes in the batch's documents of the sample (normalized
    again here: a hundredth of the documents, by default, a hundredth of the step's cost)."""
    rows = []
    if cfg.normalized_share:
        sampled = [status == "doc" and doc_id is not None and in_sample(doc_id, cfg.normalized_share)
                   for status, doc_id in zip(batch.column("status").to_pylist(), batch.column("id").to_pylist())]
        for row in batch.filter(pa.array(sampled)).select(["id", "source", "text"]).to_pylist():  # texts of the sample
            if not row["text"]:
                continue
            try:
                after = normalize(row["text"], cfg.normalize)
            except Exception:  # noqa: BLE001  (the cleaning step quarantines it with its reason)
                continue
            rows += [{"id": row["id"], "source": row["source"] or "", **change}
                     for change in changes(row["text"], after)]
    return rows_to_batch(rows, NORMALIZED_SCHEMA)


def _write(spark, tasks: list, files, staging: Path, out: str, started: float, ruled: dict) -> dict:
    """The stats of the tasks' rows (TASK_SCHEMA) and of the classifiers' rules over the corpus (`ruled`:
    their documents moved to the rejected ones); the outputs committed."""
    by_status = {s: 0 for s in ("kept", "rejected", "quarantined")}
    reasons: Counter = Counter()
    problems = []
    for row in tasks:
        if row["status"] in PROBLEMS:
            problems.append(row)
        elif row["status"] in by_status:
            by_status[row["status"]] += row["count"]
            if row["status"] == "rejected":
                reasons[row["reason"]] += row["count"]
    for name, applied in ruled.items():
        by_status["kept"] -= applied["rejected"]
        by_status["rejected"] += applied["rejected"]
        if applied["rejected"]:
            reasons[f"classifier:{name}"] += applied["rejected"]
    problems.sort(key=lambda r: (r["file"], r["record_index"]))
    warnings = [p for p in problems if p["status"] == "file_warning"]
    stats = {
        "format_version": FORMAT_VERSION,
        "input": sum(by_status.values()),
        **by_status,
        "rejected_by_reason": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "files": len(files),
        "file_errors": [{"file": p["file"], "error": p["error"]} for p in problems if p["status"] == "file_error"],
        "file_warnings": [{"file": p["file"], "warning": p["error"]} for p in warnings],
        "seconds": round(time.time() - started, 1),
        **({"classifiers": ruled} if ruled else {}),
        "checksums": checksums(spark, staging, ALL_OUTPUTS),
    }
    (staging / "report.md").write_text(removal_report(stats), encoding="utf-8")
    commit(staging, out, ALL_OUTPUTS, stats)
    return stats


def summary(stats: dict) -> str:
    lines = [f"input {stats['input']}: kept {stats['kept']}, rejected {stats['rejected']}, "
             f"quarantined {stats['quarantined']} ({stats['seconds']} s)"]
    lines += [f"  {reason}: {count}" for reason, count in list(stats["rejected_by_reason"].items())[:8]]
    lines += [f"  damaged file {e['file']}: {e['error']}" for e in stats["file_errors"]]
    lines += [f"  warning, file {w['file']}: {w['warning']}" for w in stats["file_warnings"]]
    return "\n".join(lines)


def check(cfg: Config, _sources=None) -> None:
    """One line before Spark starts: a model that cannot be read, or a label it lacks; a blocklist that cannot be
    read (a bad entry had failed the job after Spark started)."""
    Classifiers(cfg.classifiers)
    UrlFilter(cfg.url_filter)


STAGE = Stage("clean", "Clean raw text: normalization, language, PII, quality rules; rejections and quarantine kept.",
              Config, run, summary, modules=("spark_stages.clean",), check=check)
