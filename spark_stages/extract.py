"""The extract stage: WARC files in, the main text of each HTML page out, site templates removed.

Writes OUT/docs/ (WEB_DOCUMENT_SCHEMA: the clean job reads it, carrying url, host, warc_date,
content_type and charset in `metadata`), OUT/quarantine/ (records that cannot be read, with their
file, byte offset and error), OUT/report.md and OUT/stats.json: records by outcome and reason
(pages, extracted, empty after extraction, skipped by reason, quarantined), bytes in and out, file
warnings and errors, and what the template step removed.

A task reads one WARC file as a stream (prep/extract/pages.py) and writes what it found itself, as the
clean job's tasks do (spark_stages/task_outputs.py): no page's text passes through Spark's JVM, and
none is shuffled. A file's documents go to a file of their own, in the WARC file's order.

Then the site-template step: a line (a block of the extracted text) found on at least
`templates.min_pages` pages of one host and on at least `templates.min_share` of them is that site's
template (navigation, footers, "related" boxes the single-page extractor kept) and is cut from every
page of the host; a page left with nothing is counted, not written. The extracting tasks write each
page with its lines' 64-bit keys to scratch files, and per file the pages of each site and of each
line; Spark counts those (only keys move between tasks; up to `templates.in_memory_pages` pages, pyarrow
on the driver, sparing Spark's few seconds of jobs) and gives each file the template keys its pages hold;
a task per file then cuts its pages where they are. The counts are of distinct pages per
(host, normalized line), so the output is the same on any number of partitions and machines.
"""

import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from prep.arrow_rows import rows_to_batch
from prep.extract.page_worker import PageWorker
from prep.extract.pages import NEEDS_TRAFILATURA, ExtractConfig, file_outcomes, page_worker
from prep.extract.templates import cut, line_keys, site_key
from prep.ingest.inputs import WARC_SUFFIXES, InputError, InputFile, Sources, all_files, is_warc
from schemas import FORMAT_VERSION
from schemas.documents import TEMPLATE_LINE_SCHEMA, WEB_DOCUMENT_SCHEMA, WEB_QUARANTINE_SCHEMA
from spark_stages.ingest import MAX_INPUT_PARTITIONS, check_partitions, map_files
from spark_stages.outputs import SCRATCH, checksums, commit, staging_dir
from spark_stages.runner import Stage
from spark_stages.session import spark_schema
from spark_stages.task_outputs import TaskOutputs, fill_empty, part_name, prepare

log = logging.getLogger(__name__)

OUTPUTS = {"docs": WEB_DOCUMENT_SCHEMA, "quarantine": WEB_QUARANTINE_SCHEMA, "templates": TEMPLATE_LINE_SCHEMA}
CUT_OUTPUTS = {"docs": WEB_DOCUMENT_SCHEMA, "templates": TEMPLATE_LINE_SCHEMA}
# Scratch files of the template step, a file of each per WARC file: its pages with their lines' keys
# (prep/extract/templates.py), the pages of each site, and of each line of a site.
PAGE_SCHEMA = WEB_DOCUMENT_SCHEMA.append(pa.field("keys", pa.list_(pa.int64()), nullable=False))
SITE_SCHEMA = pa.schema([("site", pa.int64()), ("pages", pa.int64())])
LINE_SCHEMA = pa.schema([("file_index", pa.int64()), ("site", pa.int64()), ("key", pa.int64()),
                         ("pages", pa.int64())])
SCRATCH_OUTPUTS = {"pages": PAGE_SCHEMA, "sites": SITE_SCHEMA, "lines": LINE_SCHEMA}
# What an extracting task returns: its records counted by (status, reason) with the bytes of their pages
# (HTML in, text out), and a row per file warning or error; what a cutting task returns: a row per file.
TASK_SCHEMA = pa.schema([("status", pa.string()), ("reason", pa.string()), ("count", pa.int64()),
                         ("bytes_in", pa.int64()), ("bytes_out", pa.int64()), ("file", pa.string()),
                         ("error", pa.string())])
CUT_SCHEMA = pa.schema([("lines_removed", pa.int64()), ("pages_changed", pa.int64()), ("pages_emptied", pa.int64()),
                        ("written", pa.int64()), ("bytes_out", pa.int64())])
BATCH_ROWS = 512  # pages a task holds before handing them to its writer ...
# ... or fewer, whose text passes this: 512 WET records of 10 MB each had grown a task past 7 GB, and failed
# where a batch's column passed Arrow's 2 GiB
BATCH_CHARS = 1 << 25
MAX_LINE_KEYS = 1_000_000  # a file's (site, line) page counts held before they are written out (~150 MB)


@dataclass(frozen=True)
class TemplateConfig:
    """The cross-page step: lines repeated on many pages of one site are its template."""
    enabled: bool = True  # cut site-template lines (false: each page's text as its extractor gave it)
    min_pages: int = 5  # a line on fewer pages of its host is never template
    min_share: float = 0.3  # ... nor one on a smaller share of its host's pages
    # a crawl of at most this many pages has its lines counted on the driver (pyarrow over the scratch files'
    # keys: 0.9 MB a 1,000 pages of the evaluation crawl, 27 lines a page), not by Spark's jobs, which cost ~6 s
    # whatever the size; 0: always on Spark
    in_memory_pages: int = 100_000

    def __post_init__(self):
        if self.min_pages < 2 or not 0 < self.min_share <= 1:
            raise ValueError(f"templates.min_pages must be at least 2 and min_share in (0, 1], got {self.min_pages}, "
                             f"{self.min_share}")
        if self.in_memory_pages < 0:
            raise ValueError(f"templates.in_memory_pages must be at least 0, got {self.in_memory_pages}")


@dataclass(frozen=True)
class Config(ExtractConfig):
    """What is extracted (prep/extract/pages.py), the template step, and how the documents are laid out."""
    templates: TemplateConfig = field(default_factory=TemplateConfig)
    # files of documents, spread over them by a hash of the record id and sorted by it (a shuffle); default:
    # a file per WARC file, its pages in the WARC file's order
    partitions: int | None = None

    def __post_init__(self):
        super().__post_init__()
        check_partitions(self.partitions)


def check(cfg: Config, sources: Sources) -> None:
    files = all_files(sources)
    if not any(is_warc(f.path) for f in files):
        # a file of 1,000 documents had been one record quarantined as "not a WARC record", the job's exit 0; a
        # file beside crawls (a collection's pages.jsonl, seeds.txt) is still one quarantined record, named
        raise InputError(f"{files[0].relative}{f' and {len(files) - 1} more' if len(files) > 1 else ''}: no web "
                         f"crawl ({', '.join(WARC_SUFFIXES)}); documents go to jobs.clean")
    if cfg.extractor in NEEDS_TRAFILATURA:
        import importlib.util

        if importlib.util.find_spec("trafilatura") is None:
            raise ValueError(f"extractor {cfg.extractor} needs the trafilatura package (pip install trafilatura)")


def run(spark, sources: Sources, cfg: Config, out: str) -> dict:
    """Extracts every source's WARC files into one output; returns the stats (also OUT/stats.json)."""
    started = time.time()
    files = all_files(sources)
    staging = staging_dir(out)
    prepare(staging, OUTPUTS)
    if cfg.templates.enabled:
        prepare(staging / SCRATCH, SCRATCH_OUTPUTS)

    def extract_files(mine):
        with page_worker(cfg) as worker:  # one extracting process for the task's files
            for index, file in mine:
                yield extract_file(index, file, cfg, staging, worker)

    tasks = map_files(spark, files, extract_files, TASK_SCHEMA).collect()
    cuts = None
    if cfg.templates.enabled:
        fill_empty(staging / SCRATCH, {"sites": SITE_SCHEMA, "lines": LINE_SCHEMA})  # a crawl without a page
        pages = sum(row["count"] for row in tasks if row["status"] == "page")
        if pages <= cfg.templates.in_memory_pages:
            cuts = _without_templates_in_memory(spark, staging, cfg.templates, files)
        else:
            cuts = _without_templates(spark, staging, cfg.templates, len(files))
    fill_empty(staging, OUTPUTS)
    if cfg.partitions:
        _spread(spark, staging, cfg.partitions)
    stats = _stats(tasks, cuts, len(files), started)
    stats["checksums"] = checksums(spark, staging, list(OUTPUTS))
    (staging / "report.md").write_text(extract_report(stats), encoding="utf-8")
    commit(staging, out, list(OUTPUTS), stats)
    return stats


def extract_file(index: int, file: InputFile, cfg: Config, staging: Path, worker: PageWorker) -> pa.RecordBatch:
    """Runs in a task: extracts one WARC file, writes its quarantine and its documents (or, for the template
    step, its pages with their lines' keys and the counts of its sites and lines), and returns its counts
    (TASK_SCHEMA)."""
    outputs = TaskOutputs(staging, OUTPUTS, index)
    lines = _SiteLines(TaskOutputs(staging / SCRATCH, SCRATCH_OUTPUTS, index), index) if cfg.templates.enabled else None
    counts, bytes_in, bytes_out, problems = Counter(), Counter(), Counter(), []
    pages, quarantined, held = [], [], 0

    def write_pages():
        if lines is None:
            outputs.write("docs", rows_to_batch(pages, WEB_DOCUMENT_SCHEMA))
        else:
            lines.write_pages(pages)
        pages.clear()

    try:
        for row in file_outcomes(file, cfg, worker):
            status, reason = row["status"], row.get("reason")
            if status.startswith("file_"):
                problems.append({"status": status, "count": 1, "file": row["file"], "error": row["error"]})
                continue
            counts[status, reason] += row["count"]
            bytes_in[status, reason] += row.get("bytes_in") or 0
            if status == "page":
                pages.append(row)
                held += len(row["text"])
                if lines is None:
                    bytes_out[status, reason] += len(row["text"].encode())
                else:
                    lines.add(row)
            elif status == "quarantined":
                quarantined.append({"error": ": ".join(filter(None, (reason, row["error"]))), "file": row["file"],
                                    "offset": row.get("offset"), "id": row.get("id")})
            if len(pages) >= BATCH_ROWS or held >= BATCH_CHARS:
                write_pages()
                held = 0
        write_pages()
        outputs.write("quarantine", rows_to_batch(quarantined, WEB_QUARANTINE_SCHEMA))
        if lines is not None:
            lines.close()
        outputs.close()
    except BaseException:
        outputs.abandon()
        if lines is not None:
            lines.abandon()
        raise
    rows = [{"status": status, "reason": reason, "count": n, "bytes_in": bytes_in[status, reason],
             "bytes_out": bytes_out[status, reason]} for (status, reason), n in counts.items()]
    return rows_to_batch(rows + problems, TASK_SCHEMA)


class _SiteLines:
    """One file's pages for the template step: each with its lines' keys, and the pages of each site and of
    each of its lines, written to the file's scratch outputs."""

    def __init__(self, scratch: TaskOutputs, index: int):
        self._scratch, self._index = scratch, index
        self._site_pages, self._line_pages = Counter(), Counter()

    def add(self, page: dict) -> None:
        if not page["host"]:  # no URL, or one without a host: of no site (pooled as one, unrelated pages' shared
            page["keys"] = []  # lines had been cut as a site's template)
            return
        page["keys"] = line_keys(page["host"], page["text"])
        site = site_key(page["host"])
        self._site_pages[site] += 1
        self._line_pages.update((site, key) for key in set(page["keys"]))  # pages, not lines
        if len(self._line_pages) >= MAX_LINE_KEYS:  # counts are summed where they are read: written in parts
            self._write_lines()  # (three 10 MB pages of distinct lines had held 450 MB, 1.3 GB at the peak)

    def write_pages(self, pages: list[dict]) -> None:
        self._scratch.write("pages", rows_to_batch(pages, PAGE_SCHEMA))

    def _write_lines(self) -> None:
        lines = self._line_pages
        self._scratch.write("lines", pa.record_batch([[self._index] * len(lines), [site for site, _ in lines],
                                                      [key for _, key in lines], list(lines.values())],
                                                     schema=LINE_SCHEMA))
        self._line_pages = Counter()

    def close(self) -> None:
        sites = self._site_pages
        self._scratch.write("sites", pa.record_batch([list(sites), list(sites.values())], schema=SITE_SCHEMA))
        self._write_lines()
        self._scratch.close()

    def abandon(self) -> None:
        self._scratch.abandon()


def _without_templates(spark, staging: Path, cfg: TemplateConfig, files: int) -> list:
    """Counts the pages of every site and line (Spark, keys only), gives each file the template keys its
    pages hold, and has a task per file cut its pages into OUT/docs/; returns the cutting tasks' rows
    (CUT_SCHEMA)."""
    from pyspark.sql import functions as F

    scratch = staging / SCRATCH
    lines = spark.read.parquet(str(scratch / "lines"))
    sites = spark.read.parquet(str(scratch / "sites")).groupBy("site").agg(F.sum("pages").alias("pages"))
    template = (lines.groupBy("site", "key").agg(F.sum("pages").alias("on")).join(sites, "site")
                .where((F.col("on") >= cfg.min_pages) & (F.col("on") >= F.col("pages") * cfg.min_share)).select("key"))
    per_file = (lines.select("file_index", "key").join(template, "key", "left_semi")
                .groupBy("file_index").agg(F.collect_list("key").alias("template")))

    def cut_files(batches):
        for batch in batches:
            for index, keys in zip(batch["file_index"].to_pylist(), batch["template"].to_pylist()):
                yield cut_file(index, set(keys or ()), staging)

    return (spark.range(0, files).withColumnRenamed("id", "file_index").join(per_file, "file_index", "left")
            .repartition(min(files, MAX_INPUT_PARTITIONS), "file_index")
            .mapInArrow(cut_files, spark_schema(CUT_SCHEMA)).collect())


def _without_templates_in_memory(spark, staging: Path, cfg: TemplateConfig, files: list[InputFile]) -> list:
    """_without_templates for a crawl of at most cfg.in_memory_pages pages: the same counts and the same
    template, by pyarrow on the driver over the scratch files, each file's template keys handed to its
    cutting task."""
    scratch = staging / SCRATCH
    lines = pq.read_table(scratch / "lines", schema=LINE_SCHEMA)
    sites = pq.read_table(scratch / "sites", schema=SITE_SCHEMA).group_by("site").aggregate([("pages", "sum")])
    on = lines.group_by(["site", "key"]).aggregate([("pages", "sum")]).rename_columns(["site", "key", "on"])
    counted = on.join(sites, "site")
    template = counted.filter(pc.and_(pc.greater_equal(counted["on"], cfg.min_pages),
                                      pc.greater_equal(counted["on"], pc.multiply(counted["pages_sum"],
                                                                                  cfg.min_share))))["key"]
    per_file = lines.filter(pc.is_in(lines["key"], template)).group_by("file_index").aggregate([("key", "list")])
    keys = spark.sparkContext.broadcast(dict(zip(per_file["file_index"].to_pylist(), per_file["key_list"].to_pylist(),
                                                 strict=True)))  # once per worker, not in every task

    def cut_files(mine):
        for index, _ in mine:
            yield cut_file(index, set(keys.value.get(index, ())), staging)

    return map_files(spark, files, cut_files, CUT_SCHEMA).collect()


def cut_file(index: int, template: set[int], staging: Path) -> pa.RecordBatch:
    """Runs in a task: one WARC file's pages with their template lines cut, written to OUT/docs/ (a page
    left with nothing is not written), and the lines cut to OUT/templates/; returns what was cut (CUT_SCHEMA)."""
    counts = Counter()
    path = staging / SCRATCH / "pages" / part_name(index)
    if path.exists():  # a file without pages has none
        outputs = TaskOutputs(staging, CUT_OUTPUTS, index)
        cut_lines: dict[tuple[str, int], list] = {}  # (host, key): [the line, pages, the WARC file]
        try:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
                if template:
                    cut_texts = []
                    for text, keys, host, source in zip(
                            *(batch.column(name).to_pylist() for name in ("text", "keys", "host", "source")),
                            strict=True):
                        text, removed = cut(text, keys, template)
                        cut_texts.append(text)
                        for key, line in dict(removed).items():  # a line twice on a page: one page
                            cut_lines.setdefault((host, key), [line, 0, source])[1] += 1
                        counts.update(lines_removed=len(removed), pages_changed=bool(removed),
                                      pages_emptied=not text)
                    text = pa.array(cut_texts, pa.string())
                    batch = batch.set_column(batch.schema.get_field_index("text"), "text", text)
                    batch = batch.filter(pc.not_equal(text, ""))
                written = pc.sum(pc.binary_length(batch.column("text"))).as_py()
                counts.update(written=batch.num_rows, bytes_out=written or 0)
                outputs.write("docs", batch)
            in_order = sorted(cut_lines.items(), key=lambda kv: (kv[0][0], kv[1][0], kv[0][1]))  # host, line, key
            rows = [{"host": host, "line": line, "pages": pages, "source": source}
                    for (host, _), (line, pages, source) in in_order]
            outputs.write("templates", rows_to_batch(rows, TEMPLATE_LINE_SCHEMA))
            outputs.close()
        except BaseException:
            outputs.abandon()
            raise
    return pa.RecordBatch.from_pylist([{name: counts[name] for name in CUT_SCHEMA.names}], schema=CUT_SCHEMA)


def _spread(spark, staging: Path, partitions: int) -> None:
    """OUT/docs/ as `partitions` files, its rows spread by a hash of the record id and sorted by it."""
    by_file = staging / SCRATCH / "docs-by-file"
    os.replace(staging / "docs", by_file)
    (spark.read.parquet(str(by_file)).repartition(partitions, "id").sortWithinPartitions("id", "source", "url")
     .write.parquet(str(staging / "docs")))


def _stats(tasks: list, cuts: list | None, files: int, started: float) -> dict:
    by_status, skipped, bytes_in = Counter(), Counter(), 0
    problems = []
    for row in tasks:
        if row["status"].startswith("file_"):
            problems.append(row)
            continue
        by_status[row["status"]] += row["count"]
        bytes_in += row["bytes_in"] or 0
        if row["status"] == "skipped":
            skipped[row["reason"]] += row["count"]
    problems.sort(key=lambda r: r["file"])
    warnings = [{"file": p["file"], "warning": p["error"]} for p in problems if p["status"] == "file_warning"]
    if cuts is None:
        cut = {"lines_removed": 0, "pages_changed": 0, "pages_emptied": 0, "written": by_status["page"],
               "bytes_out": sum(row["bytes_out"] or 0 for row in tasks if row["status"] == "page")}
    else:
        cut = {name: sum(row[name] for row in cuts) for name in CUT_SCHEMA.names}
    return {
        "format_version": FORMAT_VERSION,
        "files": files,
        "records": sum(by_status.values()),
        "pages": by_status["page"] + by_status["empty"],
        "extracted": by_status["page"],
        "empty_after_extraction": by_status["empty"],
        "written": cut["written"],
        "skipped": dict(sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))),
        "quarantined": by_status["quarantined"],
        "templates": {name: cut[name] for name in ("lines_removed", "pages_changed", "pages_emptied")},
        "bytes_in": bytes_in,
        "bytes_out": cut["bytes_out"],
        "file_warnings": warnings,
        "file_errors": [{"file": p["file"], "error": p["error"]} for p in problems if p["status"] == "file_error"],
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
