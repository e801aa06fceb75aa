"""The cleaning stage: raw text in, cleaned documents, rejections and quarantine out.

Writes OUT/docs/ (kept, cleaned, with lang), OUT/rejected/ (with reason), OUT/quarantine/ (with
error, file, line, raw), OUT/report.md and OUT/stats.json, where input == kept + rejected + quarantined.
"""

import logging
import time
from dataclasses import dataclass

from prep.clean import CLEAN_RESULT_SCHEMA, CleanConfig, clean_batch
from prep.ingest.inputs import Sources, all_files
from prep.quality.url_filter import UrlFilter
from schemas import CLEAN_DOCUMENT_SCHEMA, FORMAT_VERSION, QUARANTINE_SCHEMA, REJECTED_SCHEMA
from spark_stages.ingest import default_partitions, read_input
from spark_stages.outputs import checksums, commit, staging_dir
from spark_stages.persisted import persisted
from spark_stages.reports import removal_report
from spark_stages.runner import Stage
from spark_stages.session import ARROW_BATCH_RECORDS, session_conf, spark_schema

log = logging.getLogger(__name__)

OUTPUTS = {"docs": ("kept", CLEAN_DOCUMENT_SCHEMA), "rejected": ("rejected", REJECTED_SCHEMA),
           "quarantine": ("quarantined", QUARANTINE_SCHEMA)}


@dataclass
class Config(CleanConfig):
    """The cleaning rules (prep/clean.py), and how the job spreads the work."""
    partitions: int | None = None  # cleaning tasks (default: from the input size, at least 8)
    # Documents per Arrow batch a Python worker cleans, for this stage only (default: the session's
    # spark.sql.execution.arrow.maxRecordsPerBatch, 1,000 unless --conf says otherwise): a worker holds
    # about one batch. At 157 MB Spark's own 10,000 cost 145 MB more a worker and 20% more time.
    batch_records: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.batch_records is not None and self.batch_records < 1:
            raise ValueError(f"batch_records must be at least 1, got {self.batch_records}")


def run(spark, sources: Sources, cfg: Config, out: str) -> dict:
    """Reads every source's files, cleans them with `cfg` and writes them together; returns the stats
    (also OUT/stats.json). The pipeline cleans each source alone, with its own settings."""
    started = time.time()

    blocked = spark.sparkContext.broadcast(UrlFilter(cfg.url_filter))  # the lists read here, once

    def clean_partition(batches):
        for batch in batches:
            yield clean_batch(batch, cfg, blocked.value)

    files = all_files(sources)
    records = read_input(spark, files, cfg.reader)
    # Cleaning is the expensive part: spread records evenly, whatever the sizes of the files, then
    # sort each partition by input position, so the output is the same on any number of cores.
    position = ["file_index", "record_index"]
    spread = records.repartition(cfg.partitions or default_partitions(files), *position).sortWithinPartitions(*position)
    batches = {ARROW_BATCH_RECORDS: str(cfg.batch_records)} if cfg.batch_records else {}
    with persisted() as kept, session_conf(spark, batches, override=True):
        result = kept.keep(spread.mapInArrow(clean_partition, spark_schema(CLEAN_RESULT_SCHEMA)))
        return _write(spark, result, files, out, started)


def _write(spark, result, files, out: str, started: float) -> dict:
    """The cleaned records (CLEAN_RESULT_SCHEMA) written by status, and the stats."""
    from pyspark.sql import functions as F

    staging = staging_dir(out)
    for name, (status, schema) in OUTPUTS.items():
        result.filter(F.col("status") == status).select(*schema.names).write.parquet(str(staging / name))
    counts = result.groupBy("status", "reason").count().collect()
    problems = result.filter(F.col("status").isin("file_error", "file_warning")).orderBy("file", "record_index")
    file_errors, file_warnings = [], []
    for r in problems.select("status", "file", "error").collect():
        if r["status"] == "file_error":
            file_errors.append({"file": r["file"], "error": r["error"]})
        else:
            file_warnings.append({"file": r["file"], "warning": r["error"]})

    by_status = {s: 0 for s in ("kept", "rejected", "quarantined")}
    reasons: dict[str, int] = {}
    for row in counts:
        if row["status"] in by_status:
            by_status[row["status"]] += row["count"]
        if row["status"] == "rejected":
            reasons[row["reason"]] = row["count"]
    stats = {
        "format_version": FORMAT_VERSION,
        "input": sum(by_status.values()),
        **by_status,
        "rejected_by_reason": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "files": len(files),
        "file_errors": file_errors,
        "file_warnings": file_warnings,
        "seconds": round(time.time() - started, 1),
        "checksums": checksums(spark, staging, list(OUTPUTS)),
    }
    (staging / "report.md").write_text(removal_report(stats), encoding="utf-8")
    commit(staging, out, list(OUTPUTS), stats)
    return stats


def summary(stats: dict) -> str:
    lines = [f"input {stats['input']}: kept {stats['kept']}, rejected {stats['rejected']}, "
             f"quarantined {stats['quarantined']} ({stats['seconds']} s)"]
    lines += [f"  {reason}: {count}" for reason, count in list(stats["rejected_by_reason"].items())[:8]]
    lines += [f"  damaged file {e['file']}: {e['error']}" for e in stats["file_errors"]]
    lines += [f"  warning, file {w['file']}: {w['warning']}" for w in stats["file_warnings"]]
    return "\n".join(lines)


STAGE = Stage("clean", "Clean raw text: normalization, language, PII, quality rules; rejections and quarantine kept.",
              Config, run, summary, modules=("spark_stages.clean",))
