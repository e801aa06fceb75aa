"""The extract stage: WARC files in, the main text of each HTML page out, site templates removed.

Writes OUT/docs/ (WEB_DOCUMENT_SCHEMA: the clean job reads it, carrying url, host, warc_date,
content_type and charset in `metadata`), OUT/quarantine/ (records that cannot be read, with their
file, byte offset and error), OUT/report.md and OUT/stats.json: records by outcome and reason
(pages, extracted, empty after extraction, skipped by reason, quarantined), bytes in and out, file
warnings and errors, and what the template step removed.

A task reads one WARC file as a stream (prep/extract/pages.py). Then the site-template step: a line
(a block of the extracted text) found on at least `templates.min_pages` pages of one host and on at
least `templates.min_share` of them is that site's template (navigation, footers, "related" boxes the
single-page extractor kept) and is cut from every page of the host; a page left with nothing is
counted, not written. Counts are of distinct pages per (host, normalized line), so the step is the
same on any number of partitions and machines; documents are written sorted by id in files by a hash
of it.
"""

import logging
import time
from dataclasses import dataclass, field

from prep.extract.pages import NEEDS_TRAFILATURA, ExtractConfig, file_rows
from prep.ingest.inputs import Sources, all_files
from schemas import FORMAT_VERSION
from schemas.documents import EXTRACT_RESULT_SCHEMA, WEB_DOCUMENT_SCHEMA, WEB_QUARANTINE_SCHEMA
from spark_stages.ingest import MAX_INPUT_PARTITIONS, default_partitions
from spark_stages.outputs import checksums, commit, staging_dir
from spark_stages.persisted import persisted
from spark_stages.runner import Stage
from spark_stages.session import spark_schema

log = logging.getLogger(__name__)

BLOCK_SEPARATOR = "\n\n"  # prep/extract/html_text.py joins a page's blocks so


@dataclass(frozen=True)
class TemplateConfig:
    """The cross-page step: lines repeated on many pages of one site are its template."""
    enabled: bool = True  # cut site-template lines (false: each page's text as its extractor gave it)
    min_pages: int = 5  # a line on fewer pages of its host is never template
    min_share: float = 0.3  # ... nor one on a smaller share of its host's pages

    def __post_init__(self):
        if self.min_pages < 2 or not 0 < self.min_share <= 1:
            raise ValueError(f"templates.min_pages must be at least 2 and min_share in (0, 1], got {self.min_pages}, "
                             f"{self.min_share}")


@dataclass(frozen=True)
class Config(ExtractConfig):
    """What is extracted (prep/extract/pages.py), the template step, and how the job spreads the work."""
    templates: TemplateConfig = field(default_factory=TemplateConfig)
    partitions: int | None = None  # output files (default: from the input size)


def check(cfg: Config, _sources) -> None:
    if cfg.extractor in NEEDS_TRAFILATURA:
        import importlib.util

        if importlib.util.find_spec("trafilatura") is None:
            raise ValueError(f"extractor {cfg.extractor} needs the trafilatura package (pip install trafilatura)")


def run(spark, sources: Sources, cfg: Config, out: str) -> dict:
    """Extracts every source's WARC files into one output; returns the stats (also OUT/stats.json)."""
    from pyspark.sql import functions as F

    started = time.time()
    files = all_files(sources)
    listing = spark.sparkContext.broadcast(files)

    def extract_partition(batches):
        for batch in batches:
            for index in batch["id"].to_pylist():
                yield from file_rows(index, listing.value[index], cfg)

    with persisted() as kept:
        rows = kept.keep(spark.range(0, len(files), 1, min(len(files), MAX_INPUT_PARTITIONS))
                         .mapInArrow(extract_partition, spark_schema(EXTRACT_RESULT_SCHEMA)))
        # The counts first, in a job of their own: every task extracts a file at once. Left to the template
        # step, its three branches' jobs start together and a task waits, holding its core, on a file
        # another task is extracting into the cache (the job took 1.9x as long on 2 cores).
        outcomes = _outcomes(rows)
        pages = rows.where(F.col("status") == "page")
        docs, removed = (_without_templates(pages, cfg.templates, kept) if cfg.templates.enabled
                         else (pages, None))
        staging = staging_dir(out)
        partitions = cfg.partitions or default_partitions(files)
        (docs.withColumn("source", F.col("file")).select(*WEB_DOCUMENT_SCHEMA.names)
         .repartition(partitions, "id").sortWithinPartitions("id").write.parquet(str(staging / "docs")))
        (rows.where(F.col("status") == "quarantined").orderBy("file_index", "record_index")
         .select(F.concat_ws(": ", "reason", "error").alias("error"), "file", "offset", "id")
         .select(*WEB_QUARANTINE_SCHEMA.names).write.parquet(str(staging / "quarantine")))
        stats = _stats(outcomes, rows, docs, removed, len(files), started)
        stats["checksums"] = checksums(spark, staging, ["docs", "quarantine"])
    (staging / "report.md").write_text(extract_report(stats), encoding="utf-8")
    commit(staging, out, ["docs", "quarantine"], stats)
    return stats


def _without_templates(pages, cfg: TemplateConfig, kept):
    """(the pages with their site-template lines cut, a frame of (host, lines cut, pages changed, pages
    emptied)). A line's key is its text lowercased with white space collapsed. Only the keys travel
    between tasks (the counts, then each host's template keys to its pages, broadcast where they are
    few); a page's text is cut where it is, in its own order."""
    from pyspark.sql import functions as F

    def key(line):
        return F.xxhash64(F.lower(F.regexp_replace(F.trim(line), r"\s+", " ")))

    blocks = F.filter(F.split("text", BLOCK_SEPARATOR), lambda line: F.trim(line) != "")
    # The text is cut from its blocks, and made again from those kept: cached once, as blocks.
    keyed = kept.keep(pages.withColumn("blocks", blocks).withColumn("keys", F.transform("blocks", key)).drop("text"))
    on = (keyed.select("host", F.explode(F.array_distinct("keys")).alias("key"))
          .groupBy("host", "key").agg(F.count("*").alias("on")))
    template = (on.join(keyed.groupBy("host").agg(F.count("*").alias("pages")), "host")
                .where((F.col("on") >= cfg.min_pages) & (F.col("on") >= F.col("pages") * cfg.min_share))
                .groupBy("host").agg(F.collect_set("key").alias("template")))
    cut = F.filter(F.arrays_zip("blocks", "keys"), lambda b: ~F.array_contains("template", b["keys"]))
    joined = kept.keep(keyed.join(template, "host", "left")
                       .withColumn("kept", F.when(F.col("template").isNull(), F.col("blocks"))
                                   .otherwise(F.transform(cut, lambda b: b["blocks"])))
                       .withColumn("cut", F.size("blocks") - F.size("kept")))
    removed = (joined.where(F.col("cut") > 0).groupBy("host")
               .agg(F.sum("cut").alias("lines"), F.count("*").alias("pages_changed")))
    docs = (joined.where(F.size("kept") > 0).withColumn("text", F.array_join("kept", BLOCK_SEPARATOR))
            .drop("blocks", "keys", "template", "kept", "cut"))
    emptied = joined.where(F.size("kept") == 0).count()
    return docs, (removed, emptied)


def _outcomes(rows) -> list:
    """(status, reason, records, bytes in) rows: what the files held."""
    from pyspark.sql import functions as F

    return rows.groupBy("status", "reason").agg(F.sum("count").alias("n"), F.sum("bytes_in").alias("bytes")).collect()


def _stats(outcomes: list, rows, docs, removed, files: int, started: float) -> dict:
    from pyspark.sql import functions as F

    by_status: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for row in outcomes:
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["n"]
        if row["status"] == "skipped":
            skipped[row["reason"]] = row["n"]
    problems = rows.where(F.col("status").isin("file_warning", "file_error")).orderBy("file_index", "record_index")
    found = problems.select("status", "file", "error").collect()
    bytes_in = sum(row["bytes"] or 0 for row in outcomes)
    written = docs.agg(F.count("*"), F.sum(F.octet_length("text"))).first()
    template = {"lines_removed": 0, "pages_changed": 0, "pages_emptied": 0}
    if removed is not None:
        cut, emptied = removed
        total = cut.agg(F.sum("lines"), F.sum("pages_changed")).first()
        template = {"lines_removed": total[0] or 0, "pages_changed": total[1] or 0, "pages_emptied": emptied}
    pages = by_status.get("page", 0) + by_status.get("empty", 0)
    return {
        "format_version": FORMAT_VERSION,
        "files": files,
        "records": sum(by_status.values()) - by_status.get("file_warning", 0) - by_status.get("file_error", 0),
        "pages": pages,
        "extracted": by_status.get("page", 0),
        "empty_after_extraction": by_status.get("empty", 0),
        "written": written[0],
        "skipped": dict(sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))),
        "quarantined": by_status.get("quarantined", 0),
        "templates": template,
        "bytes_in": bytes_in,
        "bytes_out": written[1] or 0,
        "file_warnings": [{"file": r["file"], "warning": r["error"]} for r in found if r["status"] == "file_warning"],
        "file_errors": [{"file": r["file"], "error": r["error"]} for r in found if r["status"] == "file_error"],
        "seconds": round(time.time() - started, 1),
    }


def extract_report(stats: dict) -> str:
    t = stats["templates"]
    lines = ["# Extract report", "",
             f"{stats['files']} WARC files, {stats['records']} records: {stats['pages']} HTML pages, "
             f"{stats['extracted']} with text ({stats['empty_after_extraction']} empty after extraction), "
             f"{stats['quarantined']} quarantined.",
             f"Site templates: {t['lines_removed']} lines cut from {t['pages_changed']} pages "
             f"({t['pages_emptied']} left empty); {stats['written']} documents written.",
             f"{stats['bytes_in'] / 1e6:.1f} MB of HTML in, {stats['bytes_out'] / 1e6:.1f} MB of text out.", "",
             "## Skipped records", ""] + [f"- {reason}: {n}" for reason, n in stats["skipped"].items()] + [""]
    lines += [f"- damaged file {e['file']}: {e['error']}" for e in stats["file_errors"]]
    lines += [f"- warning, file {w['file']}: {w['warning']}" for w in stats["file_warnings"]]
    return "\n".join(lines) + "\n"


def summary(stats: dict) -> str:
    t = stats["templates"]
    return (f"{stats['records']} records: {stats['pages']} pages, {stats['extracted']} extracted, "
            f"{stats['empty_after_extraction']} empty, {stats['quarantined']} quarantined; template lines cut "
            f"{t['lines_removed']} ({t['pages_changed']} pages); {stats['written']} documents "
            f"({stats['seconds']} s)")


STAGE = Stage("extract", "Extract the main text of the HTML pages of WARC files; site templates removed.", Config,
              run, summary, modules=("spark_stages.extract",), check=check)
