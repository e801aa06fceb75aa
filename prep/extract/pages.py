"""What a task makes of one WARC file (prep/extract/warc.py): a row per page extracted (or found empty),
per quarantined record and per file problem, and per skip reason one row with its count, for the Spark
stage to write and count."""

import contextlib
import functools
import importlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from prep.extract.encoding import decode_html
from prep.extract.html_text import html_article, title_of
from prep.extract.page_worker import ExtractionFailed, PageOverBudget, PageWorker
from prep.extract.warc import FileProblem, Page, Quarantined, Skipped, WarcConfig, read_warc
from prep.ingest.inputs import InputFile

EXTRACTORS = ("tokenmill", "hybrid", "trafilatura")
NEEDS_TRAFILATURA = ("hybrid", "trafilatura")  # optional, not in the executor group: the job checks it is there


@dataclass(frozen=True)
class ExtractConfig:
    # tokenmill: rules over resiliparse's parse (F1 0.926 at 5.3-5.6x trafilatura's speed on trafilatura's own
    # evaluation pages); hybrid: those rules, and trafilatura's fast mode for the pages where they keep under
    # fallback_below characters (F1 0.929 at 4.4x); trafilatura: its default mode (0.922, the slowest; README.md
    # and docs/benchmarks.md give the figures). hybrid and trafilatura need the trafilatura package on the executors
    extractor: str = "tokenmill"
    fallback_below: int = 800  # hybrid: characters of the rules' text under which trafilatura reads the page
    # a page whose extraction takes longer is stopped and quarantined (the evaluation pages take at most 0.3 s;
    # a hostile page of 1 MB took 54 s): prep/extract/page_worker.py
    page_seconds: float = 10.0
    # ... and one whose extraction takes more heap than this (the 1,171 evaluation pages of both benchmarks grew
    # a child's resident memory by 6 MB at most; a hostile page of 170 KB by 5 GB in its 10 s)
    page_memory_bytes: int = 1 << 30
    max_html_bytes: int = 5_000_000  # a larger HTML page is quarantined, not parsed (the evaluation's largest: 1.6 MB)
    warc: WarcConfig = field(default_factory=WarcConfig)

    def __post_init__(self):
        if self.extractor not in EXTRACTORS:
            raise ValueError(f"extractor must be one of {', '.join(EXTRACTORS)}, got {self.extractor!r}")
        if self.fallback_below < 0:
            raise ValueError(f"fallback_below must be at least 0, got {self.fallback_below}")
        # past a day, the wait's timer overflowed on every page; past 2**48 bytes, the heap limit did
        if not 0 < self.page_seconds <= 86_400 or self.max_html_bytes < 1 or not 0 < self.page_memory_bytes <= 1 << 48:
            raise ValueError(f"page_seconds must be in (0, 86400], page_memory_bytes in [1, 2**48] and max_html_bytes "
                             f"positive, got {self.page_seconds}, {self.page_memory_bytes}, {self.max_html_bytes}")


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def page_text(body: bytes, declared: str | None, cfg: ExtractConfig) -> tuple[str, str, str]:
    """(the main text by the configured extractor, the codec that decoded the page, the page's title: the
    headline taken out of the text, else the title the page gives itself; html_text.html_article) of an
    HTML page's bytes and the charset its HTTP header declares."""
    if cfg.extractor == "trafilatura":
        decoded, codec = decode_html(body, declared)
        return _trafilatura(decoded, fast=False), codec, title_of(decoded)
    text, title, codec = html_article(body, declared)
    if cfg.extractor == "hybrid" and len(text) < cfg.fallback_below:
        # a short text is where the rules miss most (an article they could not tell from its page): trafilatura
        # reads those pages, ~8% of the evaluation's, in its fast mode (docs/benchmarks.md, "The extract job")
        return _trafilatura(str(body, codec, "replace"), fast=True), codec, title  # decoded as the rules' page was
    return text, codec, title


def _trafilatura(decoded: str, fast: bool) -> str:
    trafilatura = importlib.import_module("trafilatura")
    return trafilatura.extract(decoded, fast=fast, include_comments=False, include_tables=True) or ""


def page_worker(cfg: ExtractConfig) -> PageWorker:
    """A child process that extracts pages by `cfg`, each within cfg.page_seconds and cfg.page_memory_bytes."""
    return PageWorker(functools.partial(page_text, cfg=cfg), cfg.page_seconds, cfg.page_memory_bytes)


def file_outcomes(file: InputFile, cfg: ExtractConfig, worker: PageWorker | None = None) -> Iterator[dict]:
    """Every outcome of one WARC file as a row, in the file's order: a page extracted (status `page`) or
    found empty (`empty`), a quarantined record, a file warning or error; then, per skip reason, one row
    with its count. Never raises for the file's content. `worker`: the extracting process to use (a task
    keeps one for all its files), else one of the file's own."""
    with contextlib.ExitStack() as stack:
        worker = worker or stack.enter_context(page_worker(cfg))
        yield from _outcomes(file, cfg, worker)


def _outcomes(file: InputFile, cfg: ExtractConfig, worker: PageWorker) -> Iterator[dict]:
    skipped = Counter()
    base = {"file": file.relative, "count": 1}
    for outcome in read_warc(file.path, cfg.warc):
        if isinstance(outcome, Skipped):
            skipped[outcome.reason] += 1
        elif isinstance(outcome, Page):
            try:
                text, charset, title = _text(outcome, cfg, worker)
            except (ExtractionFailed, PageOverBudget) as e:
                reason = "extraction failed" if isinstance(e, ExtractionFailed) else "over budget"
                yield {**base, "status": "quarantined", "reason": reason, "error": str(e), "id": outcome.id,
                       "offset": outcome.offset}
                continue
            yield {**base, "status": "page" if text else "empty", "id": outcome.id, "text": text, "url": outcome.url,
                   "host": host_of(outcome.url), "warc_date": outcome.date, "content_type": outcome.content_type,
                   "charset": charset, "title": title, "source": file.relative,
                   "bytes_in": len(outcome.payload)}
        elif isinstance(outcome, Quarantined):
            yield {**base, "status": "quarantined", "reason": "malformed record", "error": outcome.error,
                   "offset": outcome.offset, "id": outcome.id}
        elif isinstance(outcome, FileProblem):
            yield {**base, "status": f"file_{outcome.kind}", "error": outcome.message}
    for reason, count in sorted(skipped.items()):
        yield {"file": file.relative, "status": "skipped", "reason": reason, "count": count}


def _text(page: Page, cfg: ExtractConfig, worker: PageWorker) -> tuple[str, str, str]:
    """(main text, the charset the page was decoded with, its title: page_text); PageOverBudget for a page
    over its size or time. A text/plain page has no title."""
    if page.is_text:
        return page.payload.decode("utf-8", errors="replace").strip(), "utf-8", ""
    if len(page.payload) > cfg.max_html_bytes:
        raise PageOverBudget(f"{len(page.payload)} bytes of HTML, more than extract.max_html_bytes "
                             f"({cfg.max_html_bytes})")
    return worker(page.payload, page.charset)
