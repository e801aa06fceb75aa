"""A page's extraction runs in a child process: one that never ends, or that takes its process down, costs
that page alone (quarantined with its reason) and the next page is read by a fresh child; in a WARC file, a
hostile page of markup lexbor parses in quadratic time is stopped at its budget and every other page is read."""

import faulthandler
import os
import signal
import time
import zlib

from prep.extract.page_worker import ExtractionFailed, PageOverBudget, PageWorker
from prep.extract.pages import ExtractConfig, file_outcomes
from prep.ingest.inputs import InputFile
from tests.web_fixtures import Response, Site, articles, write_warc

SITE = Site("docs.example.org", "Debian Notes")


def echo(body: bytes, declared):
    if body == b"hang":
        time.sleep(3600)
    if body == b"crash":
        faulthandler.disable()  # pytest's dump of every thread's stack would only clutter the log
        os.kill(os.getpid(), signal.SIGSEGV)
    if body == b"raise":
        raise ValueError("a page no rule foresaw")
    return body.decode(), declared


def test_a_page_that_never_ends_or_crashes_costs_itself_alone():
    with PageWorker(echo, seconds=2) as worker:
        assert worker(b"first", "utf-8") == ("first", "utf-8")
        for bad, message in ((b"hang", "longer than 2 s"), (b"crash", "died (exit code -11)")):
            try:
                worker(bad, None)
                raise AssertionError("no error")
            except PageOverBudget as e:
                assert message in str(e)
            assert worker(b"next", None) == ("next", None)
        try:
            worker(b"raise", None)
            raise AssertionError("no error")
        except ExtractionFailed as e:
            assert str(e) == "ValueError: a page no rule foresaw"
        assert worker(b"last", None) == ("last", None)


def test_a_page_that_takes_more_memory_than_its_budget_costs_itself_alone():
    from prep.extract.html_text import html_main_text

    # a thousand open formatting elements that differ by an attribute, then "<p>x" over and over: the parser
    # clones all thousand at every paragraph (31 KB of markup, 1.9 GB of nodes unbounded)
    hostile = b"<html><body><p>" + b"".join(b"<b id=%d>" % i for i in range(1000)) + b"<p>x" * 5000
    page = b"<html><body><p>" + " ".join(articles(1, size=3)[0]).encode() + b"</p></body></html>"
    with PageWorker(lambda body, declared: html_main_text(body, declared), seconds=600,
                    memory_bytes=256 << 20) as worker:
        try:
            worker(hostile, None)
            raise AssertionError("no error")
        except (PageOverBudget, ExtractionFailed) as e:
            assert "at its memory budget, 268,435,456 bytes" in str(e) or "died" in str(e), e
        text, _ = worker(page, None)
        assert text == " ".join(articles(1, size=3)[0])


def test_a_child_that_dies_while_the_page_is_sent_costs_that_page_alone():
    # a page past the memory budget killed the child while the parent was still sending it: the send's
    # BrokenPipeError failed the task. The child is stopped (it takes nothing from the pipe) and then killed,
    # so the send of a page larger than the pipe's buffer finds it gone, whenever the kill comes
    import threading

    with PageWorker(echo, seconds=60) as worker:
        assert worker(b"first", None) == ("first", None)
        child = worker._process.pid
        os.kill(child, signal.SIGSTOP)
        threading.Timer(0.5, os.kill, (child, signal.SIGKILL)).start()
        try:
            worker(b"x" * (4 << 20), None)
            raise AssertionError("no error")
        except PageOverBudget as e:
            assert "died taking the page's 4,194,304 bytes (exit code -9" in str(e), e
        assert worker(b"next", None) == ("next", None)


def test_the_child_dies_with_its_parent(tmp_path):
    # the parent is a process of its own, killed outright; its child must not linger
    import multiprocessing

    pid_file = tmp_path / "child"

    def parent():
        def record(_body, _declared):
            pid_file.write_text(str(os.getpid()))
            time.sleep(3600)
        PageWorker(record, seconds=3600)(b"page", None)

    process = multiprocessing.get_context("fork").Process(target=parent)
    process.start()
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    os.kill(process.pid, signal.SIGKILL)
    process.join()
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        try:  # reaped by init, or a zombie of ours until then
            if open(f"/proc/{child}/stat").read().split()[2] == "Z":
                return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise AssertionError("the child outlived its parent")


def test_a_hostile_page_is_stopped_at_its_budget_and_every_other_page_is_read(tmp_path):
    # <a><b><b> repeated: lexbor's adoption agency walks a stack as deep as the page, in quadratic time (2 MB:
    # minutes); a page over max_html_bytes is not parsed at all
    pages = [Response(f"http://docs.example.org/{i}", SITE.page(f"Article {i}", body).encode())
             for i, body in enumerate(articles(2))]
    hostile = Response("http://docs.example.org/hostile", b"<html><body>" + b"<a><b><b>" * 220_000)
    huge = Response("http://docs.example.org/huge", b"<p>" + b"x" * 6_000_000)
    path = write_warc(tmp_path / "crawl.warc.gz", [pages[0], hostile, huge, pages[1]], crawl_records=False)
    cfg = ExtractConfig(page_seconds=3)
    rows = [row for row in file_outcomes(InputFile(str(path), "crawl.warc.gz"), cfg) if row["status"] != "skipped"]
    assert [row["status"] for row in rows] == ["page", "quarantined", "quarantined", "page"]
    assert "longer than 3 s" in rows[1]["error"] and "max_html_bytes" in rows[2]["error"]
    assert all(row["reason"] == "over budget" for row in rows[1:3])
    # where the record is: docs/extract.md promises each quarantined record its byte offset in the file
    data = path.read_bytes()
    for row, page in zip(rows[1:3], (hostile, huge)):
        record = zlib.decompressobj(wbits=31).decompress(data[row["offset"]:], 4096)
        assert record.startswith(b"WARC/1") and f"WARC-Target-URI: {page.url}".encode() in record
