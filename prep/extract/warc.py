"""WARC files read as a stream (fastwarc): each record becomes a page to extract, or a reason it is not
one, or a quarantined record; damage to the file becomes a warning or an error naming it.

WARC 1.0 and 1.1, gzipped per record (as Common Crawl writes them) or not, and WET files (their
`conversion` records are text already). A file is never held whole: records come one at a time, and a
record's block is read only when it is a page. Outcomes, in the file's order:

- Page: an HTTP 200 response of an HTML content type (or a WET conversion record) whose bytes are text:
  its record id, target URI, date, content type, declared charset and payload (its Content-Encoding undone
  here, within the size limit: prep/extract/payload.py);
- Skipped(reason): requests, metadata, revisits, warcinfo, other statuses (redirects, 404s), other
  content types (images, PDFs), payloads over the size limit, and bytes that are not text whatever their
  header says (`not_text_png`, `not_text_binary`, ...): counted by reason, not written;
- Quarantined(error, offset): a record that cannot be read (no Content-Length, a block shorter than it
  says, an HTTP response without a status line, a payload that does not decode), or bytes that are not a
  record between two that are;
- FileProblem: the last record cut short (a warning: every record before it is kept), or a compressed
  stream that cannot be read on (an error: the records before it are kept).

A record costs no other record of its file, whatever it declares: a gzipped file is read member by member
(each record its own gzip member, as the standard recommends), so a record that claims more bytes than its
member holds ends there; in an uncompressed file, a record that claims more than the file holds, or that is
followed by bytes that are no record, is passed over to the next line that starts a record.
"""

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from fastwarc.warc import ArchiveIterator, WarcRecordType
from isal import isal_zlib

from prep.extract.payload import PayloadError, TooLarge, binary_kind, dechunked, decoded

HTML_TYPES = ("text/html", "application/xhtml+xml")
GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 16  # bytes read from the file at a time
MAX_HEADER_BYTES = 1 << 16  # a record's WARC or HTTP headers past this are not a record's
RECORD_START = re.compile(rb"\nWARC/1\.[01]\r?\n")


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
    offset: int  # the record's byte offset in the file (where a quarantined page is found again)


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
            gzipped = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            yield from _members(raw, cfg) if gzipped else _uncompressed(raw, os.fstat(raw.fileno()).st_size, cfg)
    except BaseException as e:
        if not _read_error(e):
            raise
        yield FileProblem("error", f"{_short(e)}: the records before it are kept")  # a stream not to be read on


def _records(stream, cfg: WarcConfig, base: int = 0, room: int | None = None) -> Iterator[tuple[int, Outcome]]:
    """(offset, outcome) of each record fastwarc finds in `stream` (its offsets from `base`); `room`: the
    bytes the stream holds from its start, where known, against which a record's declared length is checked."""
    for record in ArchiveIterator(stream, parse_http=True, auto_decode="none", stream_detect=False,
                                  max_header_len=MAX_HEADER_BYTES):
        offset = record.stream_pos + base
        if room is not None and record.content_length > room - record.stream_pos:
            yield offset, Claims(offset, record.content_length)
            return
        yield offset, _outcome(record, cfg, offset)


def _members(raw, cfg: WarcConfig) -> Iterator[Outcome]:
    """A gzipped file, member by member: a record ends with its member, whatever it declares. The outcome of a
    member's last record waits until the member is known to end cleanly after it."""
    pending = b""
    while True:
        start = raw.tell() - len(pending)
        pending = pending or raw.read(CHUNK)
        if not pending:
            return
        member = GzipMember(raw, pending)
        held = None
        try:
            for _, outcome in _records(member, cfg, start):
                if held is not None:
                    yield held
                held = outcome
            member.drain()
        except BaseException as e:
            if not _read_error(e):
                raise
            if member.damaged:
                raise OSError(f"gzip member at byte {start}: {member.damaged}") from None
            member.drain()
            if isinstance(held, Page):  # what follows it in its member is its own: it declares too few bytes
                held = Quarantined(f"declares fewer bytes than its gzip member holds ({_short(e)} after it)", start)
            else:
                if held is not None:
                    yield held
                held = Quarantined(f"not a WARC record: {_short(e)}", start)
        if isinstance(held, Quarantined) and held.cut:
            if not member.ended:
                break
            held = Quarantined(f"{held.error}: its gzip member ends there", held.offset)
        if held is not None:
            yield held
            held = None
        if not member.ended:
            break
        pending = member.unused
    at = held.offset if held is not None else start
    yield FileProblem("warning", f"the last record (at byte {at}) is cut short; every record before it is kept")


def _uncompressed(raw, size: int, cfg: WarcConfig) -> Iterator[Outcome]:
    """An uncompressed file; a record that claims more than the file holds, or bytes that are not a record,
    send the reader on to the next line that starts a record."""
    start, previous = 0, None
    while start is not None:
        raw.seek(start)
        last = start
        try:
            for offset, outcome in _records(raw, cfg, room=size):
                last = offset
                if previous is not None:  # a record cut short with another after it: itself damaged
                    yield previous
                    previous = None
                if isinstance(outcome, Claims):
                    start = _next_record(raw, outcome.offset + 1)
                    if start is None:
                        previous = Quarantined(f"declares {outcome.length} bytes, more than the file holds",
                                               outcome.offset, cut=True)
                    else:
                        yield Quarantined(f"declares {outcome.length} bytes, more than the file holds; the "
                                          f"next record starts at byte {start}", outcome.offset)
                    break
                if isinstance(outcome, Quarantined) and outcome.cut:
                    previous = outcome  # unless the file ends here: then the file was cut short
                else:
                    yield outcome
            else:
                start = None
        except BaseException as e:
            if not _read_error(e):
                raise
            start = _next_record(raw, last + 1)
            if start is None:
                raise
            yield Quarantined(f"not a WARC record: {_short(e)}; read on from the next record, at byte {start}",
                              last)
    if previous is not None:
        yield FileProblem("warning", f"the last record (at byte {previous.offset}) is cut short; every "
                                     "record before it is kept")


def _next_record(raw, offset: int) -> int | None:
    """Where the first line that starts a WARC record ("WARC/1.0" or "WARC/1.1" after a line feed) at or
    after `offset` begins, or None."""
    raw.seek(offset)
    carry = b""
    while True:
        chunk = raw.read(CHUNK)
        if not chunk:
            return None
        data = carry + chunk
        found = RECORD_START.search(data)
        if found is not None:
            return raw.tell() - len(data) + found.start() + 1
        carry = data[-len(b"\nWARC/1.0\r\n"):]


def _read_error(e: BaseException) -> bool:
    """Whether `e` is fastwarc failing to read (it is written in Rust: a panic in it reaches Python as pyo3's
    PanicException, a BaseException)."""
    return isinstance(e, (OSError, ValueError)) or type(e).__name__ == "PanicException"


def _short(e: BaseException) -> str:
    return str(e)[:200] or type(e).__name__


@dataclass
class Claims:
    """A record declaring more bytes than its file holds from there."""
    offset: int
    length: int


class GzipMember:
    """One gzip member of a file as a stream of its own: it ends where the member ends. Decodes at most
    what is asked for at a time (fastwarc reads in buffers), so a member of any size costs bounded memory."""

    def __init__(self, raw, pending: bytes):
        self.raw, self.input, self.position = raw, pending, 0
        self.decoder = isal_zlib.decompressobj(zlib.MAX_WBITS | 16)
        self.ended = False  # the member's end was found (else the file ended inside it)
        self.exhausted = False
        self.damaged = ""

    def tell(self) -> int:
        return self.position

    def read(self, size: int = -1) -> bytes:
        size = CHUNK if size is None or size < 0 else size
        while not self.exhausted:
            if not self.input:
                self.input = self.decoder.unconsumed_tail or self.raw.read(CHUNK)
                if not self.input:
                    self.exhausted = True
                    break
            try:
                out = self.decoder.decompress(self.input, size)
            except isal_zlib.error as e:
                self.damaged, self.exhausted = str(e), True
                raise OSError(f"damaged gzip data: {e}") from None
            self.input = b""
            if self.decoder.eof:
                self.ended = self.exhausted = True
            if out:
                self.position += len(out)
                return out
        return b""

    def drain(self) -> None:
        """Reads the rest of the member (to find where the next one starts)."""
        while self.read(CHUNK):
            pass

    @property
    def unused(self) -> bytes:
        """The bytes read past the member's end: the next member's start."""
        return self.decoder.unused_data
def _outcome(record, cfg: WarcConfig, offset: int) -> Outcome:
    kind = record.record_type
    if record.headers.get("Content-Length") is None:
        return Quarantined("no Content-Length (a damaged or cut record)", offset, cut=True)
    if kind == WarcRecordType.conversion:
        return _conversion(record, cfg, offset)
    if kind != WarcRecordType.response:
        return Skipped(str(kind))  # warcinfo, request, metadata, revisit, resource, continuation, unknown
    if not record.is_http or record.http_headers is None or not record.http_headers.status_code:
        return Quarantined("a response record without an HTTP status line", offset)
    status = record.http_headers.status_code
    if status != 200:
        return Skipped("redirect" if 300 <= status < 400 else f"status_{status}")
    content_type = (record.http_content_type or "").lower()
    if not content_type.startswith(HTML_TYPES):
        return Skipped("not_html" if content_type else "no_content_type")
    if record.content_length > cfg.max_payload_bytes:
        return Skipped("too_large")
    payload = record.reader.read(record.content_length)  # as sent: its Content-Encoding is undone below
    if len(payload) < record.content_length:
        return Quarantined(f"a payload of {len(payload)} bytes, {record.content_length} declared (cut short)",
                           offset, cut=True)
    try:
        if "chunked" in (record.http_headers.get("Transfer-Encoding") or "").lower():
            payload = dechunked(payload)
        payload = decoded(payload, record.http_headers.get("Content-Encoding"), cfg.max_payload_bytes)
    except TooLarge:
        return Skipped("too_large")
    except PayloadError as e:
        return Quarantined(str(e), offset)
    if (kind := binary_kind(payload, record.http_charset)) is not None:
        return Skipped(f"not_text_{kind}")
    return Page(record.record_id, record.headers.get("WARC-Target-URI") or "", record.headers.get("WARC-Date") or "",
                content_type, record.http_charset, payload, False, offset)


def _conversion(record, cfg: WarcConfig, offset: int) -> Outcome:
    """A WET record: the text of a page, as extracted by whoever wrote the file."""
    if record.content_length > cfg.max_payload_bytes:
        return Skipped("too_large")
    block = record.reader.read(record.content_length)
    if len(block) < record.content_length:
        return Quarantined(f"a block of {len(block)} bytes, {record.content_length} declared", offset, cut=True)
    return Page(record.record_id, record.headers.get("WARC-Target-URI") or "", record.headers.get("WARC-Date") or "",
                record.headers.get("Content-Type") or "text/plain", "utf-8", block, True, offset)
