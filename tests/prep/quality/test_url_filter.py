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
