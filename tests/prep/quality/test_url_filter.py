"""The URL filter: blocked domains (their subdomains too), blocked pages (and what is under them), banned
words as words; from a plain list or a UT1-style folder; documents without a URL pass."""

import json

import pyarrow as pa
import pytest

from prep.clean import CLEAN_RESULT_SCHEMA, CleanConfig, clean_batch
from prep.ingest.records import READ_SCHEMA
from prep.quality.url_filter import UrlFilter, UrlFilterConfig


@pytest.fixture
def lists(tmp_path):
    (tmp_path / "plain.txt").write_text("# sites we do not train on\nspam.example.com\nhttp://news.example.org/ads/\n")
    ut1 = tmp_path / "ut1"
    for category, domains, urls in (("adult", "adult-site.example\n", "pics.example.net/private\n"),
                                    ("gambling", "roulette.example\n", ""), ("malware", "evil.example\n", "")):
        (ut1 / category).mkdir(parents=True)
        (ut1 / category / "domains").write_text(domains)
        (ut1 / category / "urls").write_text(urls)
    return tmp_path


@pytest.mark.parametrize("url, reason", [
    ("https://spam.example.com/page", "url_filter:domain"),
    ("https://www.spam.example.com/", "url_filter:domain"),  # a subdomain of a blocked domain
    ("https://deep.sub.adult-site.example/x", "url_filter:domain"),
    ("http://news.example.org/ads/banner/1.html", "url_filter:url"),  # under a blocked page
    ("https://pics.example.net/private", "url_filter:url"),
    ("https://blog.example.org/free-casino-bonus", "url_filter:banned_word"),
    ("http://news.example.org/politics/1.html", None),
    ("https://pics.example.net/public", None),
    ("https://essexcasinos.example.org/", None),  # a banned word inside another word is not banned
    ("https://roulette.example/", None),  # a category not chosen
    ("", None), (None, None),
])
def test_blocked_domains_pages_and_words(lists, url, reason):
    blocked = UrlFilter(UrlFilterConfig(blocklists=[str(lists / "plain.txt"), str(lists / "ut1")],
                                        categories=["adult", "malware"], banned_words=["casino", "bonus"]))
    assert blocked.reason(url) == reason


def test_every_category_of_a_ut1_folder_when_none_is_chosen_and_a_missing_list_is_an_error(lists):
    every = UrlFilter(UrlFilterConfig(blocklists=[str(lists / "ut1")]))
    assert every.reason("http://roulette.example/") == "url_filter:domain"
    with pytest.raises(ValueError, match="nope.txt does not exist"):
        UrlFilterConfig(blocklists=[str(lists / "nope.txt")])
    assert not UrlFilter(UrlFilterConfig())  # no list, no word: nothing to filter


def test_clean_batch_rejects_by_url_before_the_text_rules(lists):
    rows = [{"status": "doc", "file_index": 0, "record_index": i, "id": str(i), "text": text, "source": "web",
             "metadata": json.dumps(meta) if meta else None}
            for i, (text, meta) in enumerate([("Some real text. " * 40, {"url": "https://spam.example.com/a"}),
                                               ("Some real text. " * 40, {"url": "https://fine.example.com/a"}),
                                               ("Some real text. " * 40, None)])]
    out = clean_batch(pa.RecordBatch.from_pylist(rows, schema=READ_SCHEMA), CleanConfig(),
                      UrlFilter(UrlFilterConfig(blocklists=[str(lists / "plain.txt")])))
    assert out.schema == CLEAN_RESULT_SCHEMA
    reasons = out.column("reason").to_pylist()
    assert reasons[0] == "url_filter:domain" and not (reasons[1] or "").startswith("url_filter")
    assert not (reasons[2] or "").startswith("url_filter")  # no URL: passes the filter


def test_a_url_that_does_not_parse_or_is_a_megabyte_long_is_no_crash(lists):
    """Found by review (2026-12-07): http://[oops/page failed the whole clean job (urlsplit's ValueError), and a
    URL's path of 64 KB took 1 GB to look up (every prefix at once; a 1 MB one would have asked for 250 GB)."""
    blocked = UrlFilter(UrlFilterConfig(blocklists=[str(lists / "plain.txt")], banned_words=["casino"]))
    assert blocked.reason("http://[oops/page") is None
    assert blocked.reason("http://[oops/casino") == "url_filter:banned_word"  # the words are still looked for
    long_path = "/a" * 500_000
    assert blocked.reason(f"http://news.example.org/ads{long_path}") == "url_filter:url"
    assert blocked.reason(f"http://news.example.org{long_path}") is None
    assert blocked.reason("http://" + "x." * 400_000 + "spam.example.com/") is None  # past what is looked at
    assert blocked.reason("http://" + "x." * 1_000 + "spam.example.com/") == "url_filter:domain"


@pytest.mark.parametrize("make, message", [
    (lambda d: (d / "bad.txt").write_text("fine.example\n[2001:db8::1\n"), r"bad.txt:2: '\[2001:db8::1' is no domain"),
    (lambda d: __import__("os").mkfifo(d / "bad.txt"), "bad.txt: not a regular file"),
    (lambda d: ((d / "bad.txt").mkdir(), (d / "bad.txt" / "list").write_text("x.example\n")), "without the UT1 layout"),
])
def test_a_list_that_cannot_be_read_as_written_is_an_error_naming_it(tmp_path, make, message):
    """Found by review: a bad entry failed the job after Spark started, a FIFO hung or failed, and a folder of
    another layout blocked nothing unsaid."""
    make(tmp_path)
    with pytest.raises(ValueError, match=message):
        UrlFilter(UrlFilterConfig(blocklists=[str(tmp_path / "bad.txt")]))


def test_a_list_line_not_in_utf8_is_passed_over_with_a_warning(tmp_path, caplog):
    """Found by review: read with replacement characters, caf\xe9.example had become caf\ufffd.example unsaid."""
    (tmp_path / "list.txt").write_bytes(b"caf\xe9.example\nspam.example\n")
    with caplog.at_level("WARNING", logger="prep.quality.url_filter"):
        blocked = UrlFilter(UrlFilterConfig(blocklists=[str(tmp_path / "list.txt")]))
    assert blocked.domains == {"spam.example"}
    assert [r.getMessage().split(": ", 2)[2] for r in caplog.records] == ["1 line(s) not UTF-8 passed over (line 1)"]


def test_categories_and_words_that_would_match_nothing_are_errors_and_words_are_trimmed(lists):
    with pytest.raises(ValueError, match="has no category adlt"):
        UrlFilter(UrlFilterConfig(blocklists=[str(lists / "ut1")], categories=["adlt"]))
    with pytest.raises(ValueError, match="no blocklist is a folder"):
        UrlFilter(UrlFilterConfig(blocklists=[str(lists / "plain.txt")], categories=["adult"]))
    with pytest.raises(ValueError, match="an empty word"):
        UrlFilter(UrlFilterConfig(banned_words=["casino", " "]))
    assert UrlFilter(UrlFilterConfig(banned_words=[" casino "])).reason("http://x.example/casino") == \
        "url_filter:banned_word"


def test_a_blocklist_that_cannot_be_read_stops_the_clean_job_and_the_pipeline_before_spark(tmp_path, capsys):
    """Found by review: it failed in the job's run, after Spark had started (a traceback, exit 1)."""
    from spark_stages import clean, pipeline
    from spark_stages.runner import run_stage
    from tests.conftest import write_lines

    data = write_lines(tmp_path / "in" / "a.jsonl", [{"text": "x"}], mkdir=True)
    (tmp_path / "bad.txt").write_text("[2001:db8::1\n")
    for stage, flag in ((clean.STAGE, "--url_filter.blocklists"), (pipeline.STAGE, "--clean.url_filter.blocklists")):
        code = run_stage(stage, ["--input", str(data), "--output", str(tmp_path / "out"), flag,
                                 f"[{tmp_path / 'bad.txt'}]"])
        error = capsys.readouterr().err
        assert code == 2 and "bad.txt:1: '[2001:db8::1' is no domain or URL" in error and error.count("\n") == 1
    assert not (tmp_path / "out").exists()
