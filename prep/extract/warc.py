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
  says, an HTTP response without a status line, a payload that does not decode, a page without a
  WARC-Record-ID), or bytes that are not a record, between two records or after the last;
- FileProblem: the last record cut short (a warning: every record before it is kept), or a compressed
  stream that cannot be read on (an error: the records before it are kept).

A record costs no other record of its file, whatever it declares. A gzipped file is read member by member:
where each record is its own gzip member (as the standard recommends and Common Crawl writes), a record that
claims more bytes than its member holds ends there. A member that holds several records (a file gzipped
whole), or whose one record claims past its end or is followed by a line that starts one, is spilled to a
temporary file (MAX_SPILL_RATIO bounds it) and read as an uncompressed file is. In an uncompressed file, a
record that claims more than the file holds (its headers and block), or bytes that are not a record, send
the reader on to the next line that starts a record past the last record read: never inside it, where a
page's HTML may show a record of its own.
"""

import os
import re
import tempfile
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from fastwarc.warc import ArchiveIterator, WarcRecordType
from isal import isal_zlib

from prep.extract.payload import PayloadError, TooLarge, binary_kind, dechunked, decoded
from prep.panics import is_panic

HTML_TYPES = ("text/html", "application/xhtml+xml")
GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 16  # bytes read from the file at a time
MAX_HEADER_BYTES = 1 << 16  # a record's WARC or HTTP headers past this are not a record's
RECORD_START = re.compile(rb"\nWARC/1\.[01]\r?\n")
RECORD_LINE = b"\nWARC/1.0\r\n"  # its longest match
OVERSHOOT = 1024  # bytes before a record's declared end where the next record is looked for, when what follows
# its declared end is no record (a Content-Length a few bytes too large); further back is the record's own
# block, where a page about WARC files shows records of its own
HEAD_BYTES = MAX_HEADER_BYTES + CHUNK  # a member's first bytes kept: its first record's headers
RECENT_CHUNKS = 3  # a member's last chunks kept: what fastwarc read past a record before it gave it
# A member of several records is spilled to a temporary file (on disk) as it inflates: past MIN_SPILL, at most
# MAX_SPILL_RATIO times the compressed bytes read (WARCs of HTML inflate 4-10 times; a bomb 1,000: a 2 MB file
# would have written 2 GB, a 1 GB file a terabyte)
MIN_SPILL = 1 << 26
MAX_PAYLOAD_BYTES = 1 << 30  # a page of 1 GiB: a task holds a few of it at once (decoded, text, the batch)
MAX_SPILL_RATIO = 32


@dataclass(frozen=True)
class WarcConfig:
    max_payload_bytes: int = 10_000_000  # larger responses are skipped as too_large, not extracted

    def __post_init__(self):
        # 0 or -1, meant as no limit, skipped every page; 1e11, meant so too, failed every compressed page (a
        # decoder's output bound is a machine word, and memory is what the limit is for)
        if not 1 <= self.max_payload_bytes <= MAX_PAYLOAD_BYTES:
            raise ValueError(f"warc.max_payload_bytes must be 1 to {MAX_PAYLOAD_BYTES:,}, got {self.max_payload_bytes}")


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
    id: str | None = None  # the record's WARC-Record-ID, where it was read


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
            if gzipped:
                yield from _members(raw, cfg)
                return
            for outcome in _uncompressed(raw, os.fstat(raw.fileno()).st_size, cfg):
                yield _file_cut(outcome) if isinstance(outcome, Quarantined) and outcome.cut else outcome
    except BaseException as e:
        if not _read_error(e):
            raise
        yield FileProblem("error", f"{_short(e)}: the records before it are kept")  # a stream not to be read on


def _file_cut(last: Quarantined) -> FileProblem:
    return FileProblem("warning", f"the last record (at byte {last.offset}) is cut short; every record before it "
                                  "is kept")


def _records(stream, cfg: WarcConfig, base: int = 0, size: int | None = None,
             headers_end=None) -> Iterator[tuple[int, int | None, Outcome]]:
    """(position, end, outcome) of each record fastwarc finds in `stream` (outcomes' offsets from `base`): `end`
    where the record ends as it declares (its headers, found by `headers_end(position)`, and its block's
    Content-Length), None where unknown. In a file of `size` bytes, a record that declares more than the file
    holds is Claims, the last."""
    for record in ArchiveIterator(stream, parse_http=True, auto_decode="none", stream_detect=False,
                                  max_header_len=MAX_HEADER_BYTES):
        position, end = record.stream_pos, None
        if headers_end is not None and (headers := headers_end(position)) is not None:
            end = headers + _block_length(record)
        if size is not None and (end is None or end > size):
            yield position, end, Claims(position + base, None if end is None else _block_length(record),
                                        record.record_id or None)
            return
        yield position, end, _outcome(record, cfg, position + base)


def _block_length(record) -> int:
    """The record's Content-Length, its block's (record.content_length is its HTTP body's)."""
    declared = record.headers.get("Content-Length") or ""
    if not (declared.isascii() and declared.isdigit()):
        return record.content_length
    return int(declared) if len(declared) <= 18 else 1 << 62  # (int() refuses 4,300 digits)


def _after_blank_line(head: bytes, position: int) -> int | None:
    """Where the WARC headers of the record at `position` of `head` end (past their blank line), or None."""
    crlf = head.find(b"\r\n\r\n", position, position + MAX_HEADER_BYTES + 4)
    lf = head.find(b"\n\n", position, crlf + 2 if crlf >= 0 else position + MAX_HEADER_BYTES + 2)  # (as far)
    return lf + 2 if lf >= 0 else crlf + 4 if crlf >= 0 else None


def _file_headers_end(descriptor: int):
    """headers_end for a file: its headers read again where fastwarc has just read them."""
    def headers_end(position: int) -> int | None:
        for size in (4096, MAX_HEADER_BYTES + 4):
            head = os.pread(descriptor, size, position)
            if (end := _after_blank_line(head, 0)) is not None or len(head) < size:
                return None if end is None else position + end
        return None
    return headers_end


def _members(raw, cfg: WarcConfig) -> Iterator[Outcome]:
    """A gzipped file, member by member. A member holding one record (each record its own member, as the
    standard recommends and Common Crawl writes): the record ends with its member, whatever it declares. A
    member holding several (a file gzipped whole): spilled to a temporary file and read as an uncompressed
    file is."""
    pending = b""
    while True:
        start = raw.tell() - len(pending)
        pending = pending or raw.read(CHUNK)
        if not pending:
            return
        member = GzipMember(raw, pending)
        outcomes = _member_alone(member, cfg, start)
        if outcomes is None:  # several records: read again, from a temporary file
            raw.seek(start)
            member = GzipMember(raw, raw.read(CHUNK))
            with tempfile.TemporaryFile() as spilled:
                try:
                    while piece := member.read(CHUNK):
                        spilled.write(piece)
                        if member.position > MIN_SPILL + MAX_SPILL_RATIO * (raw.tell() - start):
                            member.damaged = (f"inflates past {MAX_SPILL_RATIO} times its size (a compression "
                                              "bomb), read no further")
                            break
                except OSError:
                    if not member.damaged:
                        raise
                spilled.flush()
                warned = yield from _member_ends(
                    _uncompressed(spilled, member.position, cfg, start, "its gzip member"), member)
        else:
            warned = yield from _member_ends(outcomes, member)
        if member.damaged:
            raise OSError(f"gzip member at byte {start}: {member.damaged}")
        if not member.ended:
            if not warned:
                yield FileProblem("warning", f"the last record (at byte {start}) is cut short; every record "
                                             "before it is kept")
            return
        pending = member.unused


def _member_ends(outcomes, member: "GzipMember") -> Generator[Outcome, None, bool]:
    """A member's outcomes, where a record cut short is the file's end (a warning) if the file ends inside the
    member, or damaged (quarantined) if its member ends there or is damaged. Returns whether it warned."""
    warned = False
    for outcome in outcomes:
        if isinstance(outcome, Quarantined) and outcome.cut:
            if not member.ended and not member.damaged:
                yield _file_cut(outcome)
                warned = True
                continue
            where = "ends" if member.ended else "is damaged"
            outcome = Quarantined(f"{outcome.error}: its gzip member {where} there", outcome.offset, id=outcome.id)
        yield outcome
    return warned


def _member_alone(member: "GzipMember", cfg: WarcConfig, start: int) -> list[Outcome] | None:
    """The outcomes of a member that holds one record, read as it streams; None where it may hold more
    (member.several), to be read again as a file."""
    held = None
    try:
        for _, end, outcome in _records(member, cfg, start, headers_end=member.headers_end):
            if held is not None:
                member.several = True
            member.look_past(end)
            if member.several:
                return None
            held = outcome
        member.drain()
    except BaseException as e:
        if not _read_error(e):
            raise
        if member.damaged:
            raise OSError(f"gzip member at byte {start}: {member.damaged}") from None
        if held is None:
            member.look_past(0)
        member.drain()
        if member.several:
            return None
        if isinstance(held, Page):  # what follows it in its member is its own: it declares too few bytes
            return [Quarantined(f"declares fewer bytes than its gzip member holds ({_short(e)} after it)", start)]
        return [*([held] if held is not None else []), Quarantined(f"not a WARC record: {_short(e)}", start)]
    if held is not None and member.claims_past_end:  # records may be inside what it claims
        return None
    return None if member.several else [held] if held is not None else []


def _uncompressed(raw, size: int, cfg: WarcConfig, base: int = 0, within: str = "the file") -> Iterator[Outcome]:
    """The records of an uncompressed file of `size` bytes (offsets from `base`; `within`: what it is, in
    messages). A record that claims more than the file holds, or bytes that are not a record, send the reader
    on to the next line that starts a record past the last record read (never inside it, where a page's HTML
    may show a record, but up to OVERSHOOT bytes before its declared end, where a record that declared more
    than it held put the next one). Each record is held until the next one shows where it ended: fastwarc goes
    on past bytes it cannot read without a word, and a record whose declared end lies past the next record's
    headers had hidden that record. A record cut short at the file's end comes last, `cut`: the caller says
    what that end is."""
    start, previous, held = 0, None, None
    while start is not None:
        raw.seek(start)
        resume, last = start, -1  # where the bytes after the last record read begin, and where it began
        try:
            for position, end, outcome in _records(raw, cfg, base, size, _file_headers_end(raw.fileno())):
                if previous is not None:  # a record cut short with another after it: itself damaged
                    yield Quarantined(previous.error, previous.offset, id=previous.id)
                    previous = None
                if held is not None:
                    gap = _past_space(raw, resume)
                    if position > gap:  # fastwarc skipped the bytes from `gap` to find this record
                        back = _hidden(raw, last, resume, position, size)
                        if back is not None:
                            yield _declares_more(held, last, back, base)
                            held, start = None, back
                            break
                        yield held
                        yield Quarantined(f"not a WARC record: {position - gap} bytes before the record at byte "
                                          f"{position + base} (a record before them may declare them its own); "
                                          f"read on from the next record, at byte {position + base}", gap + base)
                    else:
                        yield held
                    held = None
                if isinstance(outcome, Claims):
                    start = _next_record(raw, position + 1)
                    if start is None:
                        previous = Quarantined(outcome.what(within), outcome.offset, cut=True, id=outcome.id)
                    else:
                        yield Quarantined(f"{outcome.what(within)}; the next record starts at byte {start + base}",
                                          outcome.offset, id=outcome.id)
                    break
                resume, last = end, position
                if isinstance(outcome, Quarantined) and outcome.cut:
                    previous = outcome  # unless the file ends here: then the file was cut short
                else:
                    held = outcome
            else:
                start = None
        except BaseException as e:
            if not _read_error(e):
                raise
            if previous is not None:
                yield Quarantined(previous.error, previous.offset, id=previous.id)
                previous = None
            at = _past_space(raw, resume)
            if last >= 0:  # records were read since `start`: where the one after them starts is looked at again
                if _starts_record(raw, at):  # fastwarc read the last one otherwise (a `content-length`): again
                    if held is not None:
                        yield held
                        held = None
                    start = at  # from there (failing there at once, it is itself what cannot be read)
                    continue
                back = _hidden(raw, last, resume, at, size)
                if back is not None:
                    yield _declares_more(held, last, back, base, f" ({_short(e)} after it)")
                    held, start = None, back
                    continue
            if held is not None:
                yield held
                held = None
            start = _next_record(raw, at)
            then = (f"no record after it in {within}" if start is None else
                    f"read on from the next record, at byte {start + base}")
            yield Quarantined(f"not a WARC record: {_short(e)}; {then}", at + base)
        if held is not None and start is None:
            yield held
            held = None
    if previous is not None:
        yield previous


def _hidden(raw, last: int, resume: int, found: int, size: int) -> int | None:
    """Where a record starts that the one read at `last` hides, declaring an end (`resume`) past it, before
    `found` (where reading went on, or failed); None where there is none. A line that starts a record up to
    OVERSHOOT bytes before that end, else anywhere in what the record declares its own, and one that ends where
    another record starts or the file ends, as records do: a page about WARC files shows records of its own
    (one in its last kilobyte, junk after the page, had been read as a page and the page quarantined)."""
    for candidate, before in ((_next_record(raw, max(last + 1, resume - OVERSHOOT)), found),
                              (_next_record(raw, last + 1), resume)):
        if candidate is not None and candidate < before and _chains(raw, candidate, size):
            return candidate
    return None


CONTENT_LENGTH = re.compile(rb"\ncontent-length:[ \t]*(\d{1,18})[ \t]*\r?\n", re.IGNORECASE)


def _chains(raw, position: int, size: int) -> bool:
    """Whether the record at `position` ends, as its headers declare, where another record starts or the file
    ends."""
    headers_end = _file_headers_end(raw.fileno())(position)
    if headers_end is None:
        return False
    length = CONTENT_LENGTH.search(os.pread(raw.fileno(), headers_end - position, position))
    if length is None:
        return False
    end = _past_space(raw, headers_end + int(length.group(1)))
    return end == size or _starts_record(raw, end)


def _declares_more(held: Outcome | None, last: int, back: int, base: int, why: str = "") -> Quarantined:
    """The record read at `last`, in place of what it gave, quarantined: its declared end lies past the start
    of the next record, at `back`."""
    return Quarantined(f"declares more bytes than it holds{why}; read on from the next record, at byte "
                       f"{back + base}", last + base, id=getattr(held, "id", None))


def _starts_record(raw, offset: int) -> bool:
    """Whether a line that starts a WARC record begins at `offset`."""
    return RECORD_START.match(b"\n" + os.pread(raw.fileno(), len(RECORD_LINE), offset)) is not None


def _past_space(raw, offset: int) -> int:
    """The first byte at or after `offset` that is not white space between records."""
    head = os.pread(raw.fileno(), 256, offset)
    return offset + len(head) - len(head.lstrip(b"\r\n\t "))


def _next_record(raw, offset: int) -> int | None:
    """Where the first line that starts a WARC record ("WARC/1.0" or "WARC/1.1" after a line feed) past
    `offset` begins, or None."""
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
        carry = data[-len(RECORD_LINE):]


def _read_error(e: BaseException) -> bool:
    """Whether `e` is fastwarc failing to read (it is written in Rust: a panic in it reaches Python as pyo3's
    PanicException, a BaseException)."""
    return isinstance(e, (OSError, ValueError)) or is_panic(e)


def _short(e: BaseException) -> str:
    return str(e)[:200] or type(e).__name__


@dataclass
class Claims:
    """A record declaring more bytes than its file holds from there (`length`), or whose headers do not end
    before the file does (None)."""
    offset: int
    length: int | None
    id: str | None = None  # its WARC-Record-ID, where it was read

    def what(self, within: str) -> str:
        if self.length is None:
            return f"its WARC headers are cut short (no blank line before {within} ends)"
        return f"declares {self.length} bytes, more than {within} holds"


class GzipMember:
    """One gzip member of a file as a stream of its own: it ends where the member ends. Decodes at most
    what is asked for at a time (fastwarc reads in buffers), so a member of any size costs bounded memory."""

    def __init__(self, raw, pending: bytes):
        self.raw, self.input, self.position = raw, pending, 0
        self.decoder = isal_zlib.decompressobj(zlib.MAX_WBITS | 16)
        self.ended = False  # the member's end was found (else the file ended inside it)
        self.exhausted = False
        self.damaged = ""
        # Whether it holds several records: a line starting one past the end its first record declares, or that
        # end past the member's. Looked for from `scan_from` on as it is read, and in what it read before that
        # (fastwarc reads a record whole before it gives it) in `recent`
        self.several, self.scan_from, self.first_end = False, -1, -1
        self.head: list[bytes] = []  # its first HEAD_BYTES (or a little more): its first record's headers
        self.recent: list[bytes] = []  # the last chunks read, RECENT_CHUNKS at most
        self.tail = b""  # the last bytes read, where a line starting a record may begin

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
                self._look_for_records(out)
                self.position += len(out)
                return out
        return b""

    def _look_for_records(self, out: bytes) -> None:
        if self.position < HEAD_BYTES:
            self.head.append(out)
        self.recent = [*self.recent[1 - RECENT_CHUNKS:], out]
        if self.scan_from >= 0 and not self.several:  # (searched as it is: joined to the tail, a copy)
            self.several = bool(RECORD_START.search(out, max(0, self.scan_from - 1 - self.position))
                                or self.tail and RECORD_START.search(self.tail + out[:len(RECORD_LINE)]))
        self.tail = out[-len(RECORD_LINE):]

    def headers_end(self, position: int) -> int | None:
        found = _after_blank_line(self.head[0], position) if self.head else None  # (most often: no join)
        return found if found is not None or len(self.head) < 2 else _after_blank_line(b"".join(self.head), position)

    def look_past(self, end: int | None) -> None:
        """Looks for a line starting a record from `end` on: in what it has read, and in what it reads next
        (searching every byte cost a fifth more time than reading a file of one record a member)."""
        if self.scan_from >= 0:
            return
        at = self.position  # where the chunks from the last kept on back start
        for first in range(len(self.recent) - 1, -1, -1):
            at -= len(self.recent[first])
            if end is None or at <= end - 1:
                break
        if end is None or end - 1 < at:  # unknown, or read and no longer kept
            self.several = True
            return
        self.scan_from, self.first_end = end, end
        if end < self.position:  # (one chunk, most often: no join)
            self.several = bool(RECORD_START.search(b"".join(self.recent[first:]), end - 1 - at))

    @property
    def claims_past_end(self) -> bool:
        return self.first_end > self.position

    def drain(self) -> None:
        """Reads the rest of the member (to find where the next one starts)."""
        while self.read(CHUNK):
            pass

    @property
    def unused(self) -> bytes:
        """The bytes read past the member's end: the next member's start."""
        return self.decoder.unused_data
def _outcome(record, cfg: WarcConfig, offset: int) -> Outcome:
    outcome = _record_outcome(record, cfg, offset)
    if isinstance(outcome, Quarantined):
        outcome.id = record.record_id or None
    return outcome


def _record_outcome(record, cfg: WarcConfig, offset: int) -> Outcome:
    kind = record.record_type
    if record.headers.get("Content-Length") is None:
        return Quarantined("no Content-Length (a damaged or cut record)", offset, cut=True)
    if kind in (WarcRecordType.response, WarcRecordType.conversion) and not record.record_id:
        return Quarantined("no WARC-Record-ID", offset)  # a document's id: a page without one is no document
    if kind == WarcRecordType.conversion:
        return _conversion(record, cfg, offset)
    if kind != WarcRecordType.response:
        return Skipped(str(kind))  # warcinfo, request, metadata, revisit, resource, continuation, unknown
    declared = (record.headers.get("Content-Type") or "").strip().lower()
    if not record.is_http and declared and not declared.startswith("application/http"):
        return Skipped("not_http")  # Heritrix's dns: records (text/dns), a response of another protocol
    if not record.is_http or record.http_headers is None or not record.http_headers.status_code:
        return Quarantined("a response record without an HTTP status line", offset)
    status = record.http_headers.status_code
    if status != 200:
        return Skipped(_status_reason(status))
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


def _status_reason(status: int) -> str:
    """A skipped response's reason by its HTTP status: a code outside 100-599 is one reason, not one of 65,536."""
    if status in (301, 302, 303, 307, 308):
        return "redirect"
    return f"status_{status}" if 100 <= status <= 599 else "status_invalid"


def _conversion(record, cfg: WarcConfig, offset: int) -> Outcome:
    """A WET record: the text of a page, as extracted by whoever wrote the file."""
    if record.content_length > cfg.max_payload_bytes:
        return Skipped("too_large")
    block = record.reader.read(record.content_length)
    if len(block) < record.content_length:
        return Quarantined(f"a block of {len(block)} bytes, {record.content_length} declared", offset, cut=True)
    if (kind := binary_kind(block, "utf-8")) is not None:
        return Skipped(f"not_text_{kind}")
    return Page(record.record_id, record.headers.get("WARC-Target-URI") or "", record.headers.get("WARC-Date") or "",
                record.headers.get("Content-Type") or "text/plain", "utf-8", block, True, offset)
