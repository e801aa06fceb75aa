"""WARC files as a stream: pages found and everything else counted by reason; a cut last record is a
warning (every record before it kept), bytes that are no record an error (the records before kept)."""

import gzip
import zlib

import pytest

from prep.extract.warc import FileProblem, Page, Quarantined, Skipped, read_warc
from tests.web_fixtures import Response, Site, articles, write_warc

SITE = Site("docs.example.org", "Debian Notes")


def responses(count=3):
    return [Response(f"http://docs.example.org/{i}", SITE.page(f"Article {i}", body).encode())
            for i, body in enumerate(articles(count))]


def kinds(outcomes):
    return [type(o).__name__ + (f":{o.reason}" if isinstance(o, Skipped) else "") for o in outcomes]


def test_pages_and_every_other_record_by_reason_gzipped_or_not(tmp_path):
    for zipped in (True, False):
        path = write_warc(tmp_path / f"crawl.warc{'.gz' if zipped else ''}", responses(), gzip=zipped)
        outcomes = list(read_warc(str(path)))
        found = kinds(outcomes)
        assert found.count("Page") == 3 and found.count("Skipped:request") == 6
        assert {"Skipped:warcinfo", "Skipped:redirect", "Skipped:status_404", "Skipped:not_html",
                "Skipped:revisit", "Skipped:metadata"} <= set(found)
        page = next(o for o in outcomes if isinstance(o, Page))
        assert page.url == "http://docs.example.org/0" and page.id.startswith("<urn:uuid:")
        assert page.charset == "utf-8" and b"Article 0" in page.payload


def test_a_cut_last_record_is_a_warning_and_every_record_before_it_is_kept(tmp_path):
    path = write_warc(tmp_path / "crawl.warc", responses(), gzip=False, crawl_records=False)
    data = path.read_bytes()
    cut = tmp_path / "cut.warc"
    cut.write_bytes(data[:data.rfind(b"Article 2") + 5])  # inside the last page's payload
    outcomes = list(read_warc(str(cut)))
    assert kinds(outcomes).count("Page") == 2 and isinstance(outcomes[-1], FileProblem)
    assert outcomes[-1].kind == "warning" and "cut short" in outcomes[-1].message
    gz = write_warc(tmp_path / "crawl.warc.gz", responses(), crawl_records=False)
    (tmp_path / "cut.warc.gz").write_bytes(gz.read_bytes()[:-40])
    outcomes = list(read_warc(str(tmp_path / "cut.warc.gz")))  # the last record is the third page
    assert kinds(outcomes).count("Page") == 2 and outcomes[-1].kind == "warning"


def test_bytes_that_are_no_record_are_quarantined_and_the_records_after_them_found_again(tmp_path):
    path = write_warc(tmp_path / "crawl.warc", responses(), gzip=False, crawl_records=False)
    data = path.read_bytes()
    at = data.find(b"WARC/1", data.find(b"Article 1"))
    (tmp_path / "bad.warc").write_bytes(data[:at] + b"NOT A WARC RECORD\r\n\r\n" + data[at:])
    outcomes = list(read_warc(str(tmp_path / "bad.warc")))
    assert kinds(outcomes).count("Page") == 3 and kinds(outcomes).count("Quarantined") == 1
    assert "not a WARC record" in next(o for o in outcomes if isinstance(o, Quarantined)).error
    # gzipped: a member of junk between two records costs nothing else
    gz = write_warc(tmp_path / "crawl.warc.gz", responses(), crawl_records=False)
    members = _members(gz.read_bytes())
    junk = gzip.compress(b"NOT A WARC RECORD\r\n\r\n" * 3)
    (tmp_path / "bad.warc.gz").write_bytes(b"".join(members[:4] + [junk] + members[4:]))
    outcomes = list(read_warc(str(tmp_path / "bad.warc.gz")))
    assert kinds(outcomes).count("Page") == 3 and kinds(outcomes).count("Quarantined") == 1


def test_a_payload_that_inflates_past_any_buffer_costs_no_later_record(tmp_path):
    # 97 KB of gzip Content-Encoding that inflates to 100 MB: fastwarc's own decoding lost its place in the file
    # ("Invalid WARC header") and every later record with it
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    bomb = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    bomb = bomb.compress(b"<p>" + b"a" * 100_000_000) + bomb.flush()
    path = tmp_path / "bomb.warc.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        bodies = [(r.url, r.body, ()) for r in responses()]
        bodies.insert(1, ("http://docs.example.org/bomb", bomb, (("Content-Encoding", "gzip"),)))
        for url, body, extra in bodies:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *extra], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=BytesIO(body), http_headers=headers))
    outcomes = list(read_warc(str(path)))
    assert kinds(outcomes) == ["Page", "Skipped:too_large", "Page", "Page"]


def _members(data: bytes) -> list[bytes]:
    """A gzipped WARC file's members, each as its own compressed bytes."""
    found = []
    while data:
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
        decoder.decompress(data)
        found.append(data[:len(data) - len(decoder.unused_data)])
        data = decoder.unused_data
    return found


def _with_header(member: bytes, name: bytes, value: bytes) -> bytes:
    """A gzip member with one WARC header's value replaced."""
    record = gzip.decompress(member)
    at = record.find(name + b": ")
    end = record.find(b"\r\n", at)
    return gzip.compress(record[:at + len(name) + 2] + value + record[end:])


@pytest.mark.parametrize("claimed", [b"1000000000000000", b"40000", b"100"])
def test_a_record_that_lies_about_its_length_costs_no_other_record(tmp_path, claimed):
    # Content-Length far past the file's end (once: skipped as too_large, and the next page vanished), a few
    # kilobytes too many (it swallowed the next record's header), or too few (the rest of it is no record)
    gz = write_warc(tmp_path / "crawl.warc.gz", responses(), crawl_records=False)
    members = _members(gz.read_bytes())
    first_page = 2  # warcinfo, request, then the first response
    members[first_page] = _with_header(members[first_page], b"Content-Length", claimed)
    (tmp_path / "lie.warc.gz").write_bytes(b"".join(members))
    outcomes = list(read_warc(str(tmp_path / "lie.warc.gz")))
    pages = [o for o in outcomes if isinstance(o, Page)]
    assert [p.url for p in pages] == ["http://docs.example.org/1", "http://docs.example.org/2"]
    assert not any(isinstance(o, FileProblem) for o in outcomes)
    assert any(isinstance(o, (Quarantined, Skipped)) for o in outcomes[first_page:first_page + 2])
    plain = write_warc(tmp_path / "crawl.warc", responses(), gzip=False, crawl_records=False)
    data = plain.read_bytes()
    at = data.find(b"Content-Length: ", data.find(b"WARC-Type: response"))
    end = data.find(b"\r\n", at)
    (tmp_path / "lie.warc").write_bytes(data[:at + 16] + claimed + data[end:])
    outcomes = list(read_warc(str(tmp_path / "lie.warc")))
    # uncompressed, a record that declares too few bytes is read as far as it says (what follows it might be
    # bytes planted between two records), and the reader goes on from the next record
    assert [p.url for p in outcomes if isinstance(p, Page)][-2:] == ["http://docs.example.org/1",
                                                                      "http://docs.example.org/2"]
    assert not any(isinstance(o, FileProblem) for o in outcomes)


def test_content_that_is_not_text_is_counted_by_what_it_is_whatever_its_header_says(tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4000  # 1 MB served as text/html: a 1.5 M-character page once
    salted = b"<html><body>" + bytes(range(256)) * 400  # a binary body behind a tag
    utf16 = "<html><body><p>Plain text in UTF-16, which is half NUL bytes.</p></body></html>".encode("utf-16")
    path = write_warc(tmp_path / "crawl.warc.gz", [
        Response("http://docs.example.org/logo", png), Response("http://docs.example.org/salted", salted),
        Response("http://docs.example.org/wide", utf16, "text/html; charset=utf-16"), *responses(1)],
        crawl_records=False)
    outcomes = [o for o in read_warc(str(path)) if not isinstance(o, Skipped) or o.reason != "request"]
    assert kinds(outcomes)[1:] == ["Skipped:not_text_png", "Skipped:not_text_binary", "Page", "Page"]


def test_a_record_cut_short_in_the_middle_is_quarantined(tmp_path):
    path = write_warc(tmp_path / "crawl.warc", responses(), gzip=False, crawl_records=False)
    data = path.read_bytes()
    start = data.rfind(b"Content-Length: ", 0, data.find(b"Article 0"))  # the first page's record header
    end = data.find(b"\r\n", start)
    length = int(data[start + 16:end])
    damaged = data[:start] + f"Content-Length: {length + 7}".encode() + data[end:]  # says more than it holds
    (tmp_path / "damaged.warc").write_bytes(damaged)
    outcomes = list(read_warc(str(tmp_path / "damaged.warc")))
    assert any(isinstance(o, (Quarantined, FileProblem)) for o in outcomes)


def test_a_compressed_payload_is_held_to_the_limit_as_it_is_decoded_and_not_measured_against_the_record(tmp_path):
    # Content-Encoding: gzip, a few KB on the wire and many times that decoded (a compression bomb): too large,
    # where the decoded page was cut at the limit and extracted
    import gzip
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from prep.extract.warc import WarcConfig

    small = SITE.page("Small", articles(1)[0]).encode()
    large = small * 40
    tiny = b"<p>hi</p>"  # gzipped, longer than itself: once taken for a record cut short
    path = tmp_path / "encoded.warc.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for name, body in (("small", small), ("large", large), ("tiny", tiny)):
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                                  ("Content-Encoding", "gzip")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"http://docs.example.org/{name}", "response",
                                                          payload=BytesIO(gzip.compress(body)), http_headers=headers))
    limit = 2 * len(small)
    assert len(gzip.compress(large)) < limit < len(large)
    outcomes = list(read_warc(str(path), WarcConfig(max_payload_bytes=limit)))
    assert kinds(outcomes) == ["Page", "Skipped:too_large", "Page"]
    assert outcomes[0].payload == small and outcomes[2].payload == tiny


def _chunked(body: bytes, size: int) -> bytes:
    return b"".join(b"%x;ext=1\r\n" % len(body[i:i + size]) + body[i:i + size] + b"\r\n"
                    for i in range(0, len(body), size)) + b"0\r\n\r\n"


def test_a_payload_in_chunked_transfer_encoding_is_joined_and_one_already_joined_read_as_it_is(tmp_path):
    # crawlers that write the response as it came (wget --warc-file) keep its chunks; others join them and
    # leave the header; a chunk that runs past the record is a page cut short
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    pages = [r.body for r in responses(4)]
    gzipped = gzip.compress(pages[3])
    bodies = [(pages[0], _chunked(pages[0], 100), ()), (pages[1], pages[1], ()),
              (None, _chunked(pages[2], 100)[:-300], ()),
              (pages[3], _chunked(gzipped, 64), (("Content-Encoding", "gzip"),))]
    path = tmp_path / "chunked.warc.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for i, (_, body, extra) in enumerate(bodies):
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked"),
                                                  *extra], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"http://docs.example.org/{i}", "response",
                                                          payload=BytesIO(body), http_headers=headers))
    outcomes = list(read_warc(str(path)))
    assert kinds(outcomes) == ["Page", "Page", "Quarantined", "Page"]
    assert [o.payload for o in outcomes if isinstance(o, Page)] == [pages[0], pages[1], pages[3]]
    assert "ends early" in outcomes[2].error


# -- files from elsewhere: records built byte by byte (what a writer would never write) --------------------------

def _record(block: bytes, kind: bytes = b"response", length: bytes | None = None, headers: tuple = (),
            uri: bytes = b"http://docs.example.org/x", record_id: bool = True,
            content_type: bytes | None = None) -> bytes:
    content_type = content_type or (b"text/plain" if kind == b"conversion" else b"application/http; msgtype=response")
    lines = [b"WARC/1.0", b"WARC-Type: " + kind, b"WARC-Date: 2026-01-01T00:00:00Z", b"WARC-Target-URI: " + uri,
             b"Content-Type: " + content_type,
             b"Content-Length: " + (b"%d" % len(block) if length is None else length), *headers]
    if record_id:
        lines.insert(2, b"WARC-Record-ID: <urn:uuid:%s>" % uri.hex().encode()[-32:])
    return b"\r\n".join(lines) + b"\r\n\r\n" + block + b"\r\n\r\n"


def _page(i: int, html: bytes | None = None) -> bytes:
    html = html or b"<html><body><p>Page %d: Debian is a free operating system.</p></body></html>" % i
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html
    return _record(block, uri=b"http://docs.example.org/%d" % i)


def _urls(outcomes) -> list[str]:
    return [o.url for o in outcomes if isinstance(o, Page)]


EVERY_PAGE = [f"http://docs.example.org/{i}" for i in range(1, 41)]


def _files(tmp_path, name: str, data: bytes) -> list[str]:
    """The same records uncompressed, gzipped whole (`gzip crawl.warc`: one member, many records) and gzipped
    per record."""
    (tmp_path / f"{name}.warc").write_bytes(data)
    (tmp_path / f"{name}.whole.warc.gz").write_bytes(gzip.compress(data))
    return [str(tmp_path / f"{name}.warc"), str(tmp_path / f"{name}.whole.warc.gz")]


def test_a_page_without_a_record_id_is_quarantined_and_costs_no_other_record(tmp_path):
    # its row's id was None, which the documents' schema refuses: the file's task failed at the write
    nameless = _record(_page(0)[_page(0).find(b"HTTP/1.1"):-4], record_id=False)
    data = nameless + b"".join(_page(i) for i in range(1, 41))
    for path in _files(tmp_path, "nameless", data):
        outcomes = list(read_warc(path))
        assert _urls(outcomes) == EVERY_PAGE
        assert [o.error for o in outcomes if isinstance(o, Quarantined)] == ["no WARC-Record-ID"]


def test_a_dns_record_a_304_and_a_status_of_no_http_are_skipped_by_what_they_are(tmp_path):
    # Heritrix writes a response record of text/dns for every host it resolves: each had been quarantined as
    # "malformed"; a 304 had been counted as a redirect; a status past 599 had been a reason of its own (65,536)
    dns = _record(b"20260101000000\nexample.org.\t300\tIN\tA\t93.184.216.34\n", uri=b"dns:example.org",
                  content_type=b"text/dns")
    statuses = [_record(b"HTTP/1.1 %d X\r\nContent-Type: text/html\r\n\r\n<html></html>" % code,
                        uri=b"http://docs.example.org/s%d" % code) for code in (304, 302, 300, 999)]
    (tmp_path / "crawl.warc").write_bytes(dns + b"".join(statuses) + _page(1))
    assert kinds(read_warc(str(tmp_path / "crawl.warc"))) == [
        "Skipped:not_http", "Skipped:status_304", "Skipped:redirect", "Skipped:status_300", "Skipped:status_invalid",
        "Page"]


def test_a_quarantined_record_carries_its_record_id_where_it_was_read(tmp_path):
    damaged = _record(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"
                      b"\x1f\x8b not gzip at all", uri=b"http://docs.example.org/damaged")
    (tmp_path / "crawl.warc").write_bytes(damaged + _page(1))
    quarantined, page = read_warc(str(tmp_path / "crawl.warc"))
    assert isinstance(quarantined, Quarantined) and "damaged compressed payload" in quarantined.error
    assert quarantined.id == _record_id(damaged) and page.url
    # a record claiming more than the file holds, found again past it (the reader rebuilt it without its id)
    liar = _record(_page(2)[_page(2).find(b"HTTP/1.1"):-4], length=b"999999", uri=b"http://docs.example.org/liar")
    (tmp_path / "liar.warc").write_bytes(_page(1) + liar + _page(3))
    outcomes = list(read_warc(str(tmp_path / "liar.warc")))
    assert [o.id for o in outcomes if isinstance(o, Quarantined)] == [_record_id(liar)], outcomes


def _record_id(record: bytes) -> str:
    return record.split(b"WARC-Record-ID: ")[1].split(b"\r\n")[0].decode()


def test_a_wet_record_that_is_not_text_is_counted_by_what_it_is(tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16
    data = (_record(png, kind=b"conversion") + _record(b"\x00\x01\x02\x03" * 1000, kind=b"conversion")
            + _record(b"Debian is a free operating system.", kind=b"conversion"))
    (tmp_path / "crawl.warc.wet").write_bytes(data)
    assert kinds(read_warc(str(tmp_path / "crawl.warc.wet"))) == ["Skipped:not_text_png", "Skipped:not_text_binary",
                                                                  "Page"]


@pytest.mark.parametrize("kind", [b"request", b"response"])
def test_a_record_claiming_past_the_end_by_less_than_its_header_costs_no_later_record(tmp_path, kind):
    # the check of a claim against the file's size left out the record's own header: a record claiming 100
    # bytes past the end swallowed the 40 pages after it (a request silently, a response as "cut short")
    block = b"GET / HTTP/1.1\r\n\r\n" if kind == b"request" else _page(0)[_page(0).find(b"HTTP/1.1"):-4]
    rest = b"".join(_page(i) for i in range(1, 41))
    liar = _record(block, kind=kind, length=b"%d" % (len(block) + 4 + len(rest) + 100))
    for path in _files(tmp_path, "slack", _page(0) + liar + rest):
        outcomes = list(read_warc(path))
        assert _urls(outcomes) == ["http://docs.example.org/0", *EVERY_PAGE]
        assert kinds(outcomes).count("Quarantined") == 1 and not any(isinstance(o, FileProblem) for o in outcomes)


def test_a_lie_or_junk_inside_a_file_gzipped_whole_costs_no_other_record(tmp_path):
    # one member holding every record: a request claiming a terabyte swallowed the 40 pages after it without a
    # word, and 8 bytes of junk after the first page quarantined that page and lost the other 40
    lie = _record(b"GET / HTTP/1.1\r\n\r\n", kind=b"request", length=b"1000000000000")
    rest = b"".join(_page(i) for i in range(1, 41))
    for name, between in (("lie", lie), ("junk", b"JUNK!!\r\n")):
        data = gzip.compress(_page(0) + between + rest)
        (tmp_path / f"{name}.warc.gz").write_bytes(data)
        outcomes = list(read_warc(str(tmp_path / f"{name}.warc.gz")))
        assert _urls(outcomes) == ["http://docs.example.org/0", *EVERY_PAGE]
        assert kinds(outcomes).count("Quarantined") == 1 and not any(isinstance(o, FileProblem) for o in outcomes)


def test_reading_on_after_a_bad_record_starts_past_the_last_good_one(tmp_path):
    # the reader went on from the byte after the last good record's start: a record written inside that page's
    # HTML came out as a page of its own (any URL and id it liked), and the bad record was quarantined twice,
    # the first time at the good page's offset
    forged = _record(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>Forged</p>", uri=b"http://bank.example/")
    page = _page(0, b"<html><body><p>How a WARC record looks:</p><pre>\n" + forged + b"</pre></body></html>")
    bad = _record(b"HTTP/1.1 200 OK\r\n\r\n<p>x</p>", headers=(b"X-Long: " + b"a" * 100_000,))
    data = page + bad + _page(1)
    for path in _files(tmp_path, "forged", data):
        outcomes = list(read_warc(path))
        assert _urls(outcomes) == ["http://docs.example.org/0", "http://docs.example.org/1"]
        quarantined = [o for o in outcomes if isinstance(o, Quarantined)]
        assert len(quarantined) == 1 and quarantined[0].offset == len(page)


def test_a_member_of_several_records_that_inflates_like_a_bomb_is_spilled_no_further_than_its_bound(tmp_path,
                                                                                                   monkeypatch):
    # a member of several records is read again from a temporary file: a line starting a record and 50 MB of
    # one byte (51 KB gzipped) had it written whole, and a 1 GB file would have written a terabyte
    from prep.extract import warc

    spill = tmp_path / "spilled"
    monkeypatch.setattr(warc, "MIN_SPILL", 1 << 20)
    monkeypatch.setattr(warc.tempfile, "TemporaryFile", lambda: open(spill, "w+b"))
    data = _page(0) + _page(1) + b"\nWARC/1.0\r\n" + b"a" * 50_000_000
    (tmp_path / "bomb.warc.gz").write_bytes(gzip.compress(data))
    outcomes = list(read_warc(str(tmp_path / "bomb.warc.gz")))
    assert _urls(outcomes) == ["http://docs.example.org/0", "http://docs.example.org/1"]
    assert outcomes[-1].kind == "error" and "bomb" in outcomes[-1].message
    assert spill.stat().st_size < 4 << 20


@pytest.mark.parametrize("change", ["10 bytes too many", "content-length"])
def test_a_record_read_to_another_end_than_it_declares_costs_not_the_record_after_it(tmp_path, change):
    # reading on from the last record's declared end skipped the next record where that end fell inside it (a
    # Content-Length 10 bytes too large), or where fastwarc read another length (a lowercase field name)
    page = _page(1)
    if change == "content-length":
        damaged = page.replace(b"Content-Length", b"content-length")
    else:
        at = page.find(b"Content-Length: ") + 16
        end = page.find(b"\r\n", at)
        damaged = page[:at] + b"%d" % (int(page[at:end]) + 10) + page[end:]
    for path in _files(tmp_path, "overshoot", _page(0) + damaged + b"".join(_page(i) for i in range(2, 41))):
        outcomes = list(read_warc(path))
        assert _urls(outcomes)[-39:] == EVERY_PAGE[1:]
        assert not any(isinstance(o, FileProblem) for o in outcomes)


@pytest.mark.parametrize("extra", [10, 400, 600, 1000, 5000])
def test_a_record_declaring_more_than_it_holds_is_quarantined_alone_and_no_record_vanishes(tmp_path, extra):
    # found by the review of 2026-12-07: uncompressed or gzipped whole, a Content-Length a few hundred bytes too
    # large came out as a page (with the next record's first bytes) and quarantined besides; 600 too many put
    # its end past the next record's headers, fastwarc went on from the record after without a word, and that
    # record vanished (5,000 too many: two)
    pages = [_page(i, b"<html><body><p>Page %d: Debian is a free operating system.</p>%s</body></html>"
                   % (i, b" " * 3000)) for i in range(6)]
    at = pages[1].find(b"Content-Length: ") + 16
    end = pages[1].find(b"\r\n", at)
    pages[1] = pages[1][:at] + b"%d" % (int(pages[1][at:end]) + extra) + pages[1][end:]
    starts = [sum(map(len, pages[:i])) for i in range(6)]
    for path in _files(tmp_path, f"over{extra}", b"".join(pages)):
        outcomes = list(read_warc(path))
        urls = _urls(outcomes)
        quarantined = [o for o in outcomes if isinstance(o, Quarantined)]
        assert "http://docs.example.org/1" not in urls and quarantined[0].offset == starts[1], (path, outcomes)
        assert urls[:1] == ["http://docs.example.org/0"] and urls[-3:] == [f"http://docs.example.org/{i}"
                                                                           for i in range(3, 6)]
        # a page it hides is named by a quarantined span that holds it, never lost unsaid
        for i in range(2, 6):
            if f"http://docs.example.org/{i}" not in urls:
                assert any(q.offset <= starts[i] < _span_end(q) for q in quarantined), (i, quarantined)
        assert not any(isinstance(o, FileProblem) for o in outcomes)


def _span_end(quarantined: Quarantined) -> int:
    """Where what a quarantined record names ends: the byte it says the reader went on from."""
    import re

    found = re.search(r"at byte (\d+)", quarantined.error)
    return int(found.group(1)) if found else quarantined.offset + 1


@pytest.mark.parametrize("after", [3000, 0])
def test_junk_after_a_page_that_shows_a_record_in_its_html_reads_no_record_out_of_that_page(tmp_path, after):
    # what a record hides is looked for in its block only where it ends where another record starts: a page
    # about WARC files, junk after it, is itself and not the records it shows (the diff review: a record shown
    # in the page's last kilobyte was read as a page, and the page quarantined)
    forged = _record(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>Forged</p>", uri=b"http://bank.example/")
    page = _page(0, b"<html><body><p>How a WARC record looks:</p>" + b"x " * 1500 + b"<pre>\n" + forged
                 + b"</pre>" + b" " * after + b"</body></html>")
    for path in _files(tmp_path, "shown", page + b"JUNK!!\r\n" + _page(1)):
        outcomes = list(read_warc(path))
        assert _urls(outcomes) == ["http://docs.example.org/0", "http://docs.example.org/1"], outcomes
        assert kinds(outcomes).count("Quarantined") == 1
