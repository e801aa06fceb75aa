"""The decontamination stage: benchmark items cut out of the documents, span by span, with an audit.

Writes OUT/docs/ (every kept document, the input's columns; one without a match exactly as it was),
OUT/matches/ (a row per removed span: id, benchmark, item, start, end in the original text, score,
kind exact or fuzzy), OUT/dropped/ (the documents dropped, with their reason), OUT/quarantine/,
OUT/report.md and OUT/stats.json: input == kept + dropped + quarantined; modified and chars_removed;
per benchmark its items, the items found, the documents they were found in and the share found.

The benchmarks are read on the driver (prep/decontam/items.py) into one index (prep/decontam/index.py)
broadcast to every task; the documents stream through prep/decontam/documents.py batch by batch. Only
sums and per-benchmark counts come back to the driver, whatever the corpus size.
"""

import hashlib
import logging
import time
from dataclasses import dataclass, field

import pyarrow as pa

from prep.decontam.documents import (
    CHARS_REMOVED,
    REASON,
    SPANS,
    STATUS,
    DecontamConfig,
    decontaminate_batch,
    result_schema,
)
from prep.decontam.index import build_index
from prep.decontam.items import Benchmark, Held, read_benchmark
from prep.ingest.inputs import InputError, Sources, all_files, expand_inputs, name_problem
from schemas import FORMAT_VERSION
from schemas.decontamination import new_record
from spark_stages.ingest import check_partitions, default_partitions, load_documents, refuse_internal
from spark_stages.outputs import checksums, commit, staging_dir
from spark_stages.persisted import persisted
from spark_stages.runner import Stage
from spark_stages.session import hashable, spark_schema

log = logging.getLogger(__name__)

OUTPUTS = ["docs", "matches", "dropped", "quarantine"]


@dataclass(frozen=True)
class Config(DecontamConfig):
    """The benchmarks, how their items are matched and cut (prep/decontam/), and how the job spreads the work."""
    # NAME: PATH (files, folders or globs of items, as --input), also given as --benchmark NAME=PATH
    benchmarks: dict[str, str] = field(default_factory=dict)
    partitions: int | None = None  # output files (default: from the input size)

    def __post_init__(self):
        check_partitions(self.partitions)


def check(cfg: Config, _sources=None) -> None:
    """Every benchmark read (an error names the one with no item, or a file that cannot be read), before
    Spark starts; run reads them again (a second or two for a few hundred thousand items)."""
    read_benchmarks(cfg)


def read_benchmarks(cfg: Config) -> list[Benchmark]:
    if not cfg.benchmarks:
        raise ValueError("no benchmark given: --benchmark NAME=PATH (repeatable)")
    for name in cfg.benchmarks:  # as --benchmark NAME=PATH allows; a YAML name could be anything ("\ud800")
        if why := name_problem(name, reserved=()):
            raise ValueError(f"benchmark {name[:60]!r}: {why} (it names the matches' reason and "
                             "decontamination.json's entries)")
    if unknown := sorted(set(cfg.items.by_benchmark) - set(cfg.benchmarks)):
        raise ValueError(f"items.by_benchmark names {', '.join(unknown)}, not a benchmark given "
                         f"({', '.join(cfg.benchmarks)})")
    held = Held()  # the bounds are for all benchmarks together: the driver holds them at once
    return [read_benchmark(name, spec, cfg.items, held) for name, spec in cfg.benchmarks.items()]


def read_index(cfg: Config):
    """(the index of every benchmark's items, each benchmark's skipped records by reason)."""
    benchmarks = read_benchmarks(cfg)
    items = [(b.name, item_id, text) for b in benchmarks for item_id, text in b.items]
    index = build_index(items, cfg.index)
    log.info("benchmark index: %d items of %s, %.1f MB", index.items, ", ".join(cfg.benchmarks), index.nbytes() / 1e6)
    if index.items == 0:
        raise InputError(f"no benchmark item has {cfg.index.min_item_units} units or more: nothing to match")
    return index, {b.name: b.skipped for b in benchmarks}


def decontamination_record(cfg: Config) -> dict:
    """SHARDS/decontamination.json (schemas/decontamination.py): the benchmarks the documents were cut against,
    with their files' checksums, for the training loop to tell whether a benchmark it evaluates on was cut from
    its data. The pipeline hands it to the shards stage, which commits it with each shards folder's index."""
    benchmarks = {}
    for name, spec in cfg.benchmarks.items():
        files = []
        for file in expand_inputs(spec):
            digest, size = hashlib.sha256(), 0
            with open(file.path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
            files.append((file.relative, size, digest.hexdigest()))
        benchmarks[name] = files
    return new_record(benchmarks)


def run(spark, sources: Sources, cfg: Config, out: str) -> dict:
    """Decontaminates every source's documents into one output; returns the stats (also OUT/stats.json)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_type

    started = time.time()
    index, skipped = read_index(cfg)
    shared = spark.sparkContext.broadcast(index)
    files = all_files(sources)

    with persisted() as kept:
        docs, quarantine = load_documents(spark, files, kept)
        columns = docs.columns
        if odd := [name for name in columns if "." in name or "`" in name]:  # before any work, not after it all
            raise InputError(f"the documents' column {odd[0][:60]!r} has a dot or a backtick in its name, which "
                             "PySpark's mapInArrow reads as a field of a column: rename it")
        refuse_internal(columns, "the documents")
        if clash := [name for name in columns if name.lower() == "reason"]:  # OUT/dropped/'s own (it failed the write)
            raise InputError(f"the documents have a column {clash[0]!r}, the name OUT/dropped/ gives why a document "
                             "was dropped: rename it")
        # a timestamp comes to the tasks in the session's time zone (without it, a zoned column was a traceback)
        zone = spark.conf.get("spark.sql.session.timeZone")
        arrow_schema = pa.schema([pa.field(f.name, to_arrow_type(f.dataType, timezone=zone))
                                  for f in docs.schema.fields])

        def decontaminate_partition(batches):
            for batch in batches:
                yield decontaminate_batch(batch, shared.value, cfg)

        result = kept.keep(docs.mapInArrow(decontaminate_partition, spark_schema(result_schema(arrow_schema))))
        staging = staging_dir(out)
        partitions = cfg.partitions or default_partitions(files)
        for name, frame in (("docs", result.where(F.col(STATUS) == "kept").select(*columns)),
                            ("dropped", result.where(F.col(STATUS) == "dropped").select(*columns,
                                                                                        F.col(REASON).alias("reason")))):
            # ids may repeat in raw input: the text, then the other columns, decide between them
            (frame.repartition(partitions, "id").sortWithinPartitions("id", F.xxhash64(*hashable(frame)))
             .write.parquet(str(staging / name)))
        matches = kept.keep(result.where(F.size(SPANS) > 0).select("id", F.explode(SPANS).alias("m"))
                            .select("id", "m.*"))
        order = ["id", "start", "benchmark", "item"]  # then the rest: two documents of one id may match alike
        (matches.orderBy(*order, *(name for name in matches.columns if name not in order)).coalesce(1)
         .write.parquet(str(staging / "matches")))
        quarantine.write.parquet(str(staging / "quarantine"))
        stats = _stats(result, matches, quarantine, index, skipped, len(files), started)
        stats["checksums"] = checksums(spark, staging, OUTPUTS)
    (staging / "report.md").write_text(decontamination_report(stats), encoding="utf-8")
    commit(staging, out, OUTPUTS, stats)
    return stats


def _stats(result, matches, quarantine, index, skipped, files: int, started: float) -> dict:
    from pyspark.sql import functions as F

    by_status, reasons, notes, modified, removed = {"kept": 0, "dropped": 0}, {}, {}, 0, 0
    changed = (F.col(STATUS) == "kept") & (F.size(SPANS) > 0)
    for row in result.groupBy(STATUS, REASON).agg(F.count("*").alias("n"), F.sum(changed.cast("long")).alias("changed"),
                                                   F.sum(F.when(changed, F.col(CHARS_REMOVED))).alias("removed")
                                                   ).collect():
        by_status[row[STATUS]] += row["n"]
        if row[REASON]:  # why a document was dropped, or a note on one kept
            (reasons if row[STATUS] == "dropped" else notes)[row[REASON]] = row["n"]
        modified, removed = modified + (row["changed"] or 0), removed + (row["removed"] or 0)
    found = {r["benchmark"]: r for r in matches.groupBy("benchmark").agg(
        F.countDistinct("item").alias("items"), F.countDistinct("id").alias("documents"),
        F.sum(F.when(F.col("kind") == "exact", 1).otherwise(0)).alias("exact"),
        F.sum(F.when(F.col("kind") == "fuzzy", 1).otherwise(0)).alias("fuzzy")).collect()}
    items = {name: int((index.item_benchmark == i).sum()) for i, name in enumerate(index.benchmarks)}
    quarantined = quarantine.count()
    benchmarks = {}
    for name in index.benchmarks:
        hit = found.get(name)
        benchmarks[name] = {
            "items": items[name], "items_too_short": index.too_short[name], "items_skipped": skipped.get(name, {}),
            "items_found": hit["items"] if hit else 0, "documents": hit["documents"] if hit else 0,
            "share_found": round(hit["items"] / items[name], 6) if hit and items[name] else 0.0,
            "spans_exact": hit["exact"] if hit else 0, "spans_fuzzy": hit["fuzzy"] if hit else 0}
    return {
        "format_version": FORMAT_VERSION,
        "input": by_status["kept"] + by_status["dropped"] + quarantined,
        "kept": by_status["kept"],
        "dropped": by_status["dropped"],
        "quarantined": quarantined,
        "dropped_by_reason": dict(sorted(reasons.items())),
        "fuzzy_over_budget": notes.get("fuzzy_over_budget", 0),  # kept with its exact matches alone
        "modified": modified,
        "chars_removed": removed,
        "spans": sum(b["spans_exact"] + b["spans_fuzzy"] for b in benchmarks.values()),
        "benchmarks": benchmarks,
        "index_bytes": index.nbytes(),
        "files": files,
        "seconds": round(time.time() - started, 1),
    }


def decontamination_report(stats: dict) -> str:
    lines = ["# Decontamination report", "",
             f"{stats['input']} documents: {stats['kept']} kept ({stats['modified']} with spans cut, "
             f"{stats['chars_removed']} characters removed), {stats['dropped']} dropped, "
             f"{stats['quarantined']} quarantined.", "",
             "| benchmark | items | found | share | documents | exact spans | fuzzy spans | too short | skipped |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, b in stats["benchmarks"].items():
        lines.append(f"| {name} | {b['items']} | {b['items_found']} | {100 * b['share_found']:.2f}% | "
                     f"{b['documents']} | {b['spans_exact']} | {b['spans_fuzzy']} | {b['items_too_short']} | "
                     f"{sum(b['items_skipped'].values())} |")
    lines += ["", "## Dropped documents", ""] + [f"- {r}: {n}" for r, n in stats["dropped_by_reason"].items()]
    for name, b in stats["benchmarks"].items():
        lines += [f"- {name}: record skipped, {reason}: {n}" for reason, n in b["items_skipped"].items()]
    return "\n".join(lines) + "\n"


def summary(stats: dict) -> str:
    found = ", ".join(f"{name} {b['items_found']}/{b['items']}" for name, b in stats["benchmarks"].items())
    return (f"input {stats['input']}: kept {stats['kept']} ({stats['modified']} modified, {stats['chars_removed']} "
            f"characters removed), dropped {stats['dropped']}, quarantined {stats['quarantined']}; items found: "
            f"{found} ({stats['seconds']} s)")


STAGE = Stage("decontaminate", "Cut benchmark items out of the documents, span by span, with an audit of each.",
              Config, run, summary, modules=("spark_stages.decontaminate",), check=check,
              mapping_flags={"benchmark": ("benchmarks",)}, other_inputs=lambda cfg: list(cfg.benchmarks.values()))
