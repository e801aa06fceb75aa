"""Cleaning profiles: a base of rule settings chosen by name; what the user sets wins over it; choosing one
undoes another; the docs profile still removes the labelled junk."""

import pytest

from prep.clean import CleanConfig, clean_text
from prep.config import ConfigError, override
from prep.quality.profiles import PROFILES
from tests.labelled.quality_set import build
from tests.shard_fixtures import sample_texts


def test_web_is_the_defaults_and_a_profile_is_a_base_the_users_settings_win_over():
    assert override(CleanConfig(), {"profile": "web"}) == CleanConfig()
    docs = override(CleanConfig(), {"profile": "docs", "en": {"c4": {"min_num_sentences": 3}}})
    assert docs.profile == "docs" and docs.en.c4.min_num_sentences == 3  # the user's, not the profile's 1
    assert docs.en.fineweb.char_duplicates_ratio == 0.2 and docs.zh.fineweb.char_duplicates_ratio == 0.2
    # Chinese documentation: FineWeb-2's Mandarin line-end threshold kept, read on re-flowed paragraphs
    assert docs.zh.fineweb.line_punct_thr == CleanConfig().zh.fineweb.line_punct_thr and docs.zh.fineweb.reflow
    assert not CleanConfig().zh.fineweb.reflow and not CleanConfig().en.fineweb.reflow
    # the order in a mapping does not matter: the profile comes first
    assert override(CleanConfig(), {"en": {"c4": {"min_num_sentences": 3}}, "profile": "docs"}) == docs
    assert override(docs, {"profile": "web"}).en.fineweb == CleanConfig().en.fineweb
    assert override(docs, {"profile": "web"}).zh == CleanConfig().zh

def test_choosing_a_profile_undoes_another():
    code = override(CleanConfig(), {"profile": "code"})
    assert override(code, {"profile": "docs"}) == override(CleanConfig(), {"profile": "docs"})
    assert override(code, {"profile": "web"}) == CleanConfig()


def test_an_unknown_profile_is_an_error_naming_the_key():
    with pytest.raises(ConfigError, match="clean.profile: unknown profile 'prose'"):
        override(CleanConfig(), {"profile": "prose"}, "clean")
    with pytest.raises(ValueError, match="profile must be one of web, docs, code"):
        CleanConfig(profile="prose")


@pytest.mark.parametrize("profile", [p for p in PROFILES if p != "web"])
def test_a_profile_keeps_documentation_the_web_rules_reject(profile):
    texts = sample_texts(["python-index-pages.en"])
    kept = {p: sum(clean_text(t, override(CleanConfig(), {"profile": p})).reason is None for t in texts)
            for p in ("web", profile)}
    assert kept[profile] > kept["web"]


def test_the_docs_profile_still_removes_the_labelled_junk():
    cfg = override(CleanConfig(), {"profile": "docs"})
    items = build(0)
    for lang in ("en", "zh"):
        junk = [clean_text(x.text, cfg).reason is not None for x in items if x.lang == lang and x.label != "prose"]
        prose = [clean_text(x.text, cfg).reason is None for x in items if x.lang == lang and x.label == "prose"]
        assert sum(junk) / len(junk) >= 0.95 and sum(prose) / len(prose) >= 0.9, lang


def test_the_docs_profile_keeps_the_brackets_c4_cuts_as_citations():
    """C4's citation rule cuts "[0]", "[1151]" and "[]" out of any text (the web profile keeps it, as C4 does);
    in the sample's documentation they are code, log lines and syntax (argv[0], sshd[1151]:, "[] matches"),
    and the docs profile keeps them."""
    marks = ("argv[0]", "sshd[", "[] ")
    texts = [t for t in sample_texts(["debian-handbook.en", "python-docs.en"]) if any(m in t for m in marks)]
    web, docs = (override(CleanConfig(), {"profile": p}) for p in ("web", "docs"))
    kept = [(t, clean_text(t, web), clean_text(t, docs)) for t in texts]
    both = [(t, a.text, b.text) for t, a, b in kept if a.reason is None and b.reason is None]
    assert len(both) >= 5
    for text, cut, whole in both:
        assert [whole.count(m) for m in marks] == [text.count(m) for m in marks]
        assert cut.count("[") < whole.count("[")
