import pytest

from prep.clean import CleanConfig, clean_text, clean_texts
from prep.config import ConfigError, load_yaml, override
from tests.labelled.clean_quality import evaluate
from tests.prep.quality.test_rules import CHINESE, ENGLISH


def test_language_identification_and_rule_choice():
    en, zh = clean_text(ENGLISH, CleanConfig()), clean_text(CHINESE, CleanConfig())
    assert (en.lang, en.reason) == ("en", None)
    assert (zh.lang, zh.reason) == ("zh", None)


def test_empty_after_normalization_is_rejected():
    assert clean_text("\x00\x07  \n\n", CleanConfig()).reason == "normalize:empty"


def test_yaml_overrides_and_unknown_keys(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("en:\n  gopher_quality:\n    min_doc_words: 10\nzh:\n  c4:\n    enabled: false\n")
    cfg = override(CleanConfig(), load_yaml(str(good)))
    assert cfg.en.gopher_quality.min_doc_words == 10 and cfg.zh.c4.enabled is False
    assert cfg.zh.gopher_quality.stop_words == CleanConfig().zh.gopher_quality.stop_words
    bad = tmp_path / "bad.yaml"
    bad.write_text("en:\n  gopher_quality:\n    min_doc_wrods: 10\n")
    with pytest.raises(ConfigError, match="min_doc_wrods"):
        override(CleanConfig(), load_yaml(str(bad)))


def test_default_rules_keep_prose_and_remove_junk_in_each_language():
    """The labelled set of tests/labelled/quality_set.py: real prose and six kinds of junk, both languages."""
    result = evaluate(seed=0)
    for lang in ("en", "zh"):
        assert result[lang]["prose_kept"] >= 0.80, (lang, result[lang], result["prose_losses"])
        assert result[lang]["junk_removed"] >= 0.95, (lang, result[lang])


def test_a_rule_that_raises_quarantines_the_document_instead_of_failing(monkeypatch):
    import pyarrow as pa

    import prep.clean as clean_module
    from prep.clean import clean_batch
    from prep.ingest.records import READ_SCHEMA

    def broken(_text, _cfg, _char_based):
        raise ValueError("boom")

    monkeypatch.setattr(clean_module, "gopher_quality", broken)
    batch = pa.RecordBatch.from_pylist([{"status": "doc", "file_index": 0, "record_index": 0, "id": "a",
                                         "text": ENGLISH, "source": "in.jsonl"}], schema=READ_SCHEMA)
    (row,) = clean_batch(batch, CleanConfig()).to_pylist()
    assert row["status"] == "quarantined" and row["error"] == "cleaning failed: ValueError: boom"
    assert row["file"] == "in.jsonl" and row["raw"] == ENGLISH.encode()


def test_a_text_the_language_model_refuses_gets_its_error_and_the_others_their_language(refusing_language_model):
    """fastText's binding gives no prediction for a line with nothing it knows, and prep.langid raises for
    the whole call: each text is then asked alone (prep.langid.identify_each), the refused one quarantined
    with its error, the rest cleaned as ever."""
    english, chinese = clean_texts([ENGLISH, CHINESE], CleanConfig())
    cleaned = clean_texts([ENGLISH, f"{refusing_language_model} text", CHINESE], CleanConfig())
    assert isinstance(cleaned[1], ValueError) and "no word or character n-gram" in str(cleaned[1])
    assert (cleaned[0], cleaned[2]) == (english, chinese) and (english.lang, chinese.lang) == ("en", "zh")


@pytest.mark.parametrize("settings, message", [
    ({"language": {"sample_chars": 0}}, "sample_chars must be at least 1"),
    ({"language": {"min_score": 7}}, r"min_score must be in \[0, 1\]"),
    ({"en": {"c4": {"max_word_length": -1}}}, "max_word_length must be at least 1"),
    ({"en": {"c4": {"policy_phrases": [""]}}}, "an empty phrase"),
    ({"en": {"fineweb": {"short_line_thr": -0.5}}}, r"short_line_thr must be in \[0, 1\]"),
    ({"en": {"gopher_quality": {"max_doc_words": -1}}}, "max_doc_words must be at least 50"),
    ({"en": {"gopher_repetition": {"top_n_grams": [[2, 1.5]]}}}, r"n-gram shares must be in \[0, 1\]"),
    ({"en": {"word_diversity": {"min_distinct_ratio": 2}}}, r"min_distinct_ratio must be in \[0, 1\]"),
])
def test_a_rule_setting_out_of_its_range_is_refused_naming_it(settings, message):
    """Found by review (2026-12-07): each of these had been taken, and rejected every English document (or made
    every text "other", so no language's rules ran), while the run succeeded."""
    with pytest.raises(ValueError, match=message):
        override(CleanConfig(), settings)


def test_stop_words_are_compared_as_the_words_are_lowercased():
    """Found by review: stop words written [The, Of] matched no word (the words are lowercased) and every English
    document was rejected for min_stop_words."""
    cfg = override(CleanConfig(), {"en": {"gopher_quality": {"stop_words": ["The", " Of", "AND"]}}})
    assert cfg.en.gopher_quality.stop_words == ("the", "of", "and")
    assert clean_text(ENGLISH, cfg).reason is None
