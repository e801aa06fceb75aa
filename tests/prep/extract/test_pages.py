"""The extractors a job can choose: the rules alone, the rules with trafilatura for the pages they
read little of (hybrid), and trafilatura alone."""

import pytest

from prep.extract.html_text import main_text
from prep.extract.pages import ExtractConfig, page_text
from tests.web_fixtures import Site, articles

SITE = Site("docs.example.org", "Debian Notes")


def _text(page: str, extractor: str, **settings) -> str:
    text, codec, _ = page_text(page.encode(), None, ExtractConfig(extractor=extractor, **settings))
    assert codec == "utf-8"
    return text


def test_hybrid_keeps_the_rules_text_where_it_is_long_and_asks_trafilatura_where_it_is_short():
    import trafilatura

    long_page = SITE.page("About packages", articles(1, size=6)[0])
    assert len(main_text(long_page)) >= 800
    assert _text(long_page, "hybrid") == main_text(long_page)  # no second extractor
    body = articles(1, size=2)[0]
    short_page = SITE.page("About packages", body)
    assert len(main_text(short_page)) < 800
    text = _text(short_page, "hybrid")
    assert text == trafilatura.extract(short_page, fast=True, include_comments=False, include_tables=True)
    assert text != main_text(short_page) and all(p in text for p in body)
    assert _text(short_page, "hybrid", fallback_below=0) == main_text(short_page)


def test_trafilatura_alone_and_a_bad_setting():
    body = articles(1, size=3)[0]
    assert all(p in _text(SITE.page("About", body), "trafilatura") for p in body)
    # trafilatura's text holds no headline either: the title is the one the page gives itself (its <h1>)
    page = SITE.page("About packages", body).encode()
    assert page_text(page, None, ExtractConfig(extractor="trafilatura"))[2] == "About packages"
    with pytest.raises(ValueError, match="extractor must be one of"):
        ExtractConfig(extractor="readability")
    with pytest.raises(ValueError, match="fallback_below"):
        ExtractConfig(fallback_below=-1)


def test_hybrid_hands_trafilatura_the_page_as_the_rules_decoded_it():
    # a short page, mostly ASCII, in Shift_JIS as its header says: read again from its bytes by codec name
    # (cp932, no label of the web), it went to detection and came to trafilatura as windows-1252 mojibake
    sentence = "The committee met on Tuesday at the カフェ and agreed to publish its report."
    body = SITE.page("Notes", [sentence]).encode("cp932")
    text, codec, title = page_text(body, "shift_jis", ExtractConfig(extractor="hybrid"))
    assert codec == "cp932" and sentence in text and title == "Notes", text
