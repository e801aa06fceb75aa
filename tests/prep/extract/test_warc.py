"""WARC files as a stream: pages found and everything else counted by reason; a cut last record is a
warning (every record before it kept), bytes that are no record an error (the records before kept)."""

from prep.extract.warc import FileProblem, Page, Quarantined, Skipped, read_warc
from tests.web_fixtures import Response, Site, articles, write_warc

SITE = Site("docs.example.org", "Debian Notes")


def responses(count=3):
    return [Response(f"http://docs.example.org/{i}", SITE.page(f"Article {i}", body).encode())
            for i, body in enumerate(articles(count))]


def kinds(outcomes):
    return [type(o).__name__ + (f":{o.reason}" if isinstance(o, Skipped) else "") for o in outcomes]


def test_pages_and_every_other_record_by_reason_gzipped_or_not(tmp_path):
    for gzip in (True, False):
        path = write_warc(tmp_path / f"crawl.warc{'.gz' if gzip else ''}", responses(), gzip=gzip)
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


def test_bytes_that_are_no_record_end_the_file_with_an_error_after_the_records_before(tmp_path):
    path = write_warc(tmp_path / "crawl.warc", responses(), gzip=False, crawl_records=False)
    data = path.read_bytes()
    at = data.find(b"WARC/1", data.find(b"Article 1"))
    (tmp_path / "bad.warc").write_bytes(data[:at] + b"NOT A WARC RECORD\r\n\r\n" + data[at:])
    outcomes = list(read_warc(str(tmp_path / "bad.warc")))
    assert kinds(outcomes).count("Page") == 2 and outcomes[-1].kind == "error"


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
