from prep.dedup.shingles import normalize_for_dedup, shingles, units


def test_english_is_word_ngrams_after_normalization():
    normalized = normalize_for_dedup("The Quick, brown FOX -- jumped over 42 dogs!")
    assert normalized == "the quick brown fox jumped over 00 dogs"
    assert shingles("The quick brown fox jumps over", 5) == ["the quick brown fox jumps", "quick brown fox jumps over"]


def test_chinese_is_character_ngrams():
    assert units("床前明月光，疑是地上霜。") == list("床前明月光疑是地上霜")
    assert shingles("床前明月光", 3) == ["床 前 明", "前 明 月", "明 月 光"]


def test_mixed_text_in_one_rule():
    assert units("用 Python 3.11 写的程序") == ["用", "python", "0", "00", "写", "的", "程", "序"]


def test_full_width_and_compatibility_forms_fold():
    assert normalize_for_dedup("ＡＢＣ　１２３，ﬁle") == normalize_for_dedup("abc 123, file")


def test_short_documents_are_one_shingle_not_dropped():
    assert shingles("Hello world", 5) == ["hello world"]
    assert shingles("", 5) == [""]
