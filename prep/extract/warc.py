"""WARC files read as a stream (fastwarc): each record becomes a page to extract, or a reason it is not
one, or a quarantined record; damage to the file becomes a warning or an error naming it.

WARC 1.0 and 1.1, gzipped per record (as Common Crawl writes them) or not, and WET files (their
`conversion` records are text already). A file is never held whole: records come one at a time, and a
record's block is read only when it is a page. Outcomes, in the file's order:

- Page: an HTTP 200 response of an HTML content type (or a WET conversion record): its record id,
  target URI, date, content type, declared charset and payload;
- Skipped(reason): requests, metadata, revisits, warcinfo, other statuses (redirects, 404s), other
  content types (images, PDFs), payloads over the size limit: counted by reason, not written;
- Quarantined(error, offset): a record that cannot be read (no Content-Length, a block shorter than
  it says, an HTTP response without a status line);
- FileProblem: the last record cut short (a warning: every record before it is kept), or bytes that
  are not a WARC record (an error: the records before them are kept, the rest of the file cannot be
  found again).
"""

from collections.abc import Iterator
from dataclasses import dataclass

from fastwarc.warc import ArchiveIterator, WarcRecordType

HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True)
class WarcConfig:
    max_payload_bytes: int = 10_000_000  # larger responses are skipped as too_large, not extracted


@dataclass
class Page:
    id: str  # WARC-Record-ID
    url: str
    date: str  # WARC-Date
    content_type: str
    charset: str | None  # as the HTTP header declares it
    payload: bytes
    is_text: bool  # a WET conversion record: text already, no HTML to extract


@dataclass
class Skipped:
    reason: str


@dataclass
class Quarantined:
    error: str
    offset: int
    cut: bool = False  # shorter than its headers say: the file's end, if it is the last record


@dataclass
class FileProblem:
    kind: str  # "warning" or "error"
    message: str


Outcome = Page | Skipped | Quarantined | FileProblem


def read_warc(path: str, cfg: WarcConfig = WarcConfig()) -> Iterator[Outcome]:
    try:
        with open(path, "rb") as raw:
            previous: Quarantined | None = None
            for record in ArchiveIterator(raw, parse_http=True, auto_decode="content"):
                if previous is not None:  # a record cut short with another after it: itself damaged
                    yield previous
                    previous = None
                outcome = _outcome(record, cfg)
                if isinstance(outcome, Quarantined) and outcome.cut:
                    previous = outcome  # unless the file ends here: then the file was cut short
                else:
                    yield outcome
            if previous is not None:
                yield FileProblem("warning", f"the last record (at byte {previous.offset}) is cut short; every "
                                             "record before it is kept")
    except OSError as e:  # not a WARC record, or a compressed stream that cannot be read on
        yield FileProblem("error", f"{e}: the records before it are kept")


def _outcome(record, cfg: WarcConfig) -> Outcome:
    kind = record.record_type
    if record.headers.get("Content-Length") is None:
        return Quarantined("no Content-Length (a damaged or cut record)", record.stream_pos, cut=True)
    if kind == WarcRecordType.conversion:
        return _conversion(record, cfg)
    if kind != WarcRecordType.response:
        return Skipped(str(kind))  # warcinfo, request, metadata, revisit, resource, continuation, unknown
    if not record.is_http or record.http_headers is None or not record.http_headers.status_code:
        return Quarantined("a response record without an HTTP status line", record.stream_pos)
    status = record.http_headers.status_code
    if status != 200:
        return Skipped("redirect" if 300 <= status < 400 else f"status_{status}")
    content_type = (record.http_content_type or "").lower()
    if not content_type.startswith(HTML_TYPES):
        return Skipped("not_html" if content_type else "no_content_type")
    if record.content_length > cfg.max_payload_bytes:
        return Skipped("too_large")
    payload = record.reader.read(cfg.max_payload_bytes + 1)  # decoded (Content-Encoding): may outgrow the record
    if len(payload) > cfg.max_payload_bytes:
        return Skipped("too_large")
    # a decoded payload's length says nothing of the record's (a gzipped page of a few bytes decodes shorter)
    encoded = (record.http_headers.get("Content-Encoding") or "identity").strip().lower() != "identity"
    if not encoded and len(payload) < record.content_length:
        return Quarantined(f"a payload of {len(payload)} bytes, {record.content_length} declared (cut short)",
                           record.stream_pos, cut=True)
    return Page(record.record_id, record.headers.get("WARC-Target-URI") or "", record.headers.get("WARC-Date") or "",
                content_type, record.http_charset, payload, False)


def _conversion(record, cfg: WarcConfig) -> Outcome:
    """A WET record: the text of a page, as extracted by whoever wrote the file."""
    if record.content_length > cfg.max_payload_bytes:
        return Skipped("too_large")
    block = record.reader.read()
    if len(block) < record.content_length:
        return Quarantined(f"a block of {len(block)} bytes, {record.content_length} declared", record.stream_pos,
                           cut=True)
    return Page(record.record_id, record.headers.get("WARC-Target-URI") or "", record.headers.get("WARC-Date") or "",
                record.headers.get("Content-Type") or "text/plain", "utf-8", block, True)
