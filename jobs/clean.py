"""The cleaning job: raw text in, cleaned documents, rejections and quarantine out.

    spark-submit jobs/clean.py --input IN --output OUT [--config FILE]
    python -m jobs.clean --input IN --output OUT [--config FILE] [--conf key=value ...]

Writes OUT/docs/ (kept, cleaned, with lang), OUT/rejected/ (with reason), OUT/quarantine/ (with
error, file, line, raw), OUT/report.md and OUT/stats.json, where input == kept + rejected + quarantined.
"""

import os
import sys

if __package__ in (None, ""):  # run as a file by spark-submit: put the project root in place of jobs/ on the
    # path, before anything imports the standard library's tokenize (jobs/tokenize.py would shadow it)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import argparse
import time

from jobs.outputs import checksums, commit, staging_dir
from jobs.reports import removal_report
from jobs.spark_session import spark_for_job, spark_schema
from jobs.ingest import default_partitions, read_input
from prep.clean import CLEAN_RESULT_SCHEMA, CleanConfig, clean_batch, load_clean_config
from prep.config import ConfigError, to_yaml
from prep.inputs import InputError, InputFile, expand_inputs
from schemas import CLEAN_DOCUMENT_SCHEMA, FORMAT_VERSION, QUARANTINE_SCHEMA, REJECTED_SCHEMA

OUTPUTS = {"docs": ("kept", CLEAN_DOCUMENT_SCHEMA), "rejected": ("rejected", REJECTED_SCHEMA),
           "quarantine": ("quarantined", QUARANTINE_SCHEMA)}


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="jobs.clean", description=__doc__.split("\n")[0])
    parser.add_argument("--input", help="files, directories or globs, comma-separated (required)")
    parser.add_argument("--output", help="output folder (required)")
    parser.add_argument("--config", help="YAML file overriding the defaults (see --print-config)")
    parser.add_argument("--print-config", action="store_true", help="print the effective configuration and exit")
    parser.add_argument("--partitions", type=int, help="cleaning tasks (default: from the input size, at least 8)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting (repeatable)")
    args = parser.parse_args(argv)
    if not args.print_config and not (args.input and args.output):
        parser.error("--input and --output are required")
    return args


def run_clean(spark, files: list[InputFile], cfg: CleanConfig, out: str, partitions: int | None = None) -> dict:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.time()

    def clean_partition(batches):
        for batch in batches:
            yield clean_batch(batch, cfg)

    records = read_input(spark, files, cfg.reader)
    # Cleaning is the expensive part: spread records evenly, whatever the sizes of the files, then
    # sort each partition by input position, so the output is the same on any number of cores.
    position = ["file_index", "record_index"]
    spread = records.repartition(partitions or default_partitions(files), *position).sortWithinPartitions(*position)
    result = spread.mapInArrow(clean_partition, spark_schema(CLEAN_RESULT_SCHEMA)).persist(StorageLevel.DISK_ONLY)
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
    result.unpersist()

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


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        cfg = load_clean_config(args.config)
        if args.print_config:
            print(to_yaml(cfg), end="")
            return 0
        files = expand_inputs(args.input)
    except (InputError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    spark = spark_for_job("tokenmill-clean", args.conf, ("jobs.clean",))
    stats = run_clean(spark, files, cfg, args.output, args.partitions)
    print(summary(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
