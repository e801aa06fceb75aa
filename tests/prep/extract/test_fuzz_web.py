"""Property-based fuzzing of what a crawl hands the extract job: WARC records built with every lie a record
can tell (lengths, encodings, types, bytes that are no record, a file cut anywhere), and HTML of every shape
a parser chokes on. Each input finishes within its budget and comes out as a page, a count by reason or a
quarantined record with its reason: no exception escapes, and an honest file's pages are all read."""

import gzip
import uuid
import zlib

import brotli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.extract.page_worker import PageOverBudget
from prep.extract.pages import ExtractConfig, page_worker
from prep.extract.warc import FileProblem, Page, Quarantined, Skipped, WarcConfig, read_warc

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMIT = 200_000  # the fuzzed reader's payload limit
# gzip's header holds the time unless told otherwise: a draw's bytes (and, gzipped again, its length) changed
# with the second, and hypothesis, replaying a case, found its data drawn differently (FlakyStrategyDefinition)
ENCODERS = {"gzip": lambda b: gzip.compress(b, mtime=0), "deflate": zlib.compress, "br": brotli.compress,
            "identity": lambda b: b}
TAGS = ["div", "p", "a", "b", "i", "select", "option", "optgroup", "ruby", "rt", "rp", "table", "td", "tr", "li",
        "ul", "script", "style", "noscript", "article", "aside", "form", "template", "svg", "math", "iframe",
        "textarea", "nav", "footer", "main", "h1", "br", "meta", "title", "head", "body", "html", "pre", "font"]
TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["Debian is a free operating system.", "中文网页的正文。", "&amp;", "&#0;", "&#99999999;", "&lt;", "\x00",
     "<!--", "-->", "<![CDATA[", "]]>", "<!doctype html>", "\ufeff", "\ue000tokenmill article body\ue000"])


@st.composite
def tag_soup(draw) -> bytes:
    """HTML of random tags, attributes and text, a piece of it repeated up to thousands of times."""
    pieces = []
    for _ in range(draw(st.integers(1, 30))):
        tag = draw(st.sampled_from(TAGS))
        kind = draw(st.sampled_from(["open", "close", "text", "attributes"]))
        if kind == "open":
            pieces.append(f"<{draw(st.sampled_from([tag, tag.upper()]))}>")
        elif kind == "close":
            pieces.append(f"</{tag}>")
        elif kind == "attributes":
            value = draw(st.sampled_from(['"x"', "'y", "entry-content", '"articleBody"', "", '"' + "a" * 300]))
            charset = draw(st.sampled_from(["utf-8", "gbk", "x"]))
            pieces.append(f"<{tag} class={value} itemprop={value} charset={charset}>")
        else:
            pieces.append(draw(TEXT))
        if draw(st.integers(0, 9)) == 0:
            pieces[-1] *= draw(st.integers(2, 5000))
    page = "".join(pieces).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):  # bytes that are no UTF-8
        at = draw(st.integers(0, len(page)))
        page = page[:at] + draw(st.binary(max_size=8)) + page[at:]
    return page


def test_html_of_any_shape_is_read_or_stopped_at_its_budget_and_nothing_escapes():
    with page_worker(ExtractConfig(page_seconds=5)) as worker:
        @FUZZ
        @given(tag_soup(), st.sampled_from([None, "utf-8", "gbk", "shift_jis", "utf-16", "base64", "x-bogus"]))
        def check(page, declared):
            try:
                text, codec, title = worker(page, declared)  # an exception in the extractor: ExtractionFailed
            except PageOverBudget:
                return
            assert isinstance(text, str) and isinstance(codec, str) and isinstance(title, str)

        check()


def warc_record(kind: str, payload: bytes, content_type: str, encoding: str | None, status: str,
                length_change: int, http: bool) -> bytes:
    head = b""
    if http:
        headers = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}"]
        if encoding:
            headers.append(f"Content-Encoding: {encoding}")
        head = ("\r\n".join(headers) + "\r\n\r\n").encode("latin-1", "replace")
    block = head + payload
    record_id = uuid.uuid5(uuid.NAMESPACE_URL, repr(payload))  # a draw's own, the same every time
    headers = ["WARC/1.0", f"WARC-Type: {kind}", f"WARC-Record-ID: <urn:uuid:{record_id}>",
               "WARC-Date: 2026-12-04T00:00:00Z", "WARC-Target-URI: http://docs.example.org/page",
               f"Content-Type: {'application/http; msgtype=response' if http else 'text/plain'}",
               f"Content-Length: {max(0, len(block) + length_change)}"]
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + block + b"\r\n\r\n"


@st.composite
def warc_file(draw) -> bytes:
    """A WARC file's bytes: records that may lie about anything, the file cut, flipped or salted with junk."""
    records = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["response", "response", "request", "conversion", "metadata", "bogus"]))
        body = draw(st.sampled_from([b"<html><body><p>Debian is a free operating system made by volunteers.</p>",
                                     b"\x89PNG\r\n\x1a\n" + bytes(range(256)), b"", b"a" * 300_000])) \
            if draw(st.booleans()) else draw(st.binary(max_size=300))
        encoding = draw(st.sampled_from([None, "identity", "gzip", "deflate", "br", "gzip, br", "x-unknown"]))
        payload = body
        for name in reversed([e.strip() for e in (encoding or "").split(",") if e.strip()]):
            payload = ENCODERS.get(name, lambda b: b)(payload) if draw(st.integers(0, 4)) else payload + b"junk"
        content_type = draw(st.sampled_from(["text/html", "text/html; charset=utf-8", "image/png", "", "text/html;;;"]))
        status = draw(st.sampled_from(["200 OK", "200 OK", "301 Moved", "404 Not Found", "banana"]))
        lie = draw(st.sampled_from([0, 0, 0, 7, -7, 10 ** 15, -(10 ** 6)]))
        records.append(warc_record(kind, payload, content_type, encoding, status, lie, kind != "conversion"))
    zipped = draw(st.booleans())
    data = b"".join(gzip.compress(r, mtime=0) if zipped else r for r in records)
    damaged = draw(st.sampled_from(["none", "none", "cut", "junk", "flip"]))
    if damaged == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif damaged == "junk":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=64)) + data[at:]
    elif damaged == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    return data


@FUZZ
@given(warc_file())
def test_any_warc_file_is_read_record_by_record_and_nothing_escapes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("warc") / "fuzz.warc"
    path.write_bytes(data)
    outcomes = list(read_warc(str(path), WarcConfig(max_payload_bytes=LIMIT)))
    for outcome in outcomes:
        assert isinstance(outcome, (Page, Skipped, Quarantined, FileProblem))
        if isinstance(outcome, Page):
            assert len(outcome.payload) <= LIMIT
        elif isinstance(outcome, Skipped):
            assert outcome.reason
        elif isinstance(outcome, Quarantined):
            assert outcome.error and outcome.offset >= 0
        else:
            assert outcome.kind in ("warning", "error") and outcome.message


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["gzip", "identity", "br"]), st.booleans()), min_size=1, max_size=6),
       st.booleans())
def test_an_honest_file_gives_every_page_it_holds(tmp_path_factory, pages, zipped):
    page = b"<html><body><p>Debian is a free operating system made by volunteers.</p></body></html>"
    records = [warc_record("request", b"", "", None, "200 OK", 0, True)]
    for encoding, html in pages:
        body = page if html else b"%PDF-1.7 not a page"
        records.append(warc_record("response", ENCODERS[encoding](body), "text/html", encoding, "200 OK", 0, True))
    path = tmp_path_factory.mktemp("warc") / "honest.warc"
    path.write_bytes(b"".join(gzip.compress(r, mtime=0) if zipped else r for r in records))
    outcomes = list(read_warc(str(path)))
    assert [o.payload for o in outcomes if isinstance(o, Page)] == [page for _, html in pages if html]
    assert [o.reason for o in outcomes if isinstance(o, Skipped)].count("not_text_pdf") == sum(
        not html for _, html in pages)
    assert not any(isinstance(o, (Quarantined, FileProblem)) for o in outcomes)
