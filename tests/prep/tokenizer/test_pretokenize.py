from tokenizers import pre_tokenizers

from prep.tokenizer.pretokenize import byte_alphabet, decoder, pre_tokenizer, pre_tokens


def split(text):
    """Pre-tokens decoded back to text, for readable assertions."""
    byte_decoder = decoder()
    return [byte_decoder.decode([piece]) for piece, _ in pre_tokenizer().pre_tokenize_str(text)]


def test_digits_are_grouped_by_three():
    assert split("in 2024, 1234567 users") == ["in", " ", "202", "4", ",", " ", "123", "456", "7", " users"]


def test_chinese_runs_are_isolated_from_latin_and_punctuation():
    assert split("用Python写程序，很快。") == ["用", "Python", "写程序", "，", "很快", "。"]


def test_english_is_split_like_llama3():
    assert split("We're here: don't panic!\n\nOK") == ["We", "'re", " here", ":", " don", "'t", " panic", "!\n\n", "OK"]


def test_pieces_cover_the_text_exactly():
    text = "Mixed 中文 text, 3.14159 and emoji 👍🏽 and\ttabs  \n end"
    assert "".join(split(text)) == text


def test_every_byte_has_a_symbol():
    alphabet = byte_alphabet()
    assert len(alphabet) == 256 and len(set(alphabet)) == 256
    assert set(alphabet) == set(pre_tokenizers.ByteLevel.alphabet())


def test_byte_symbol_table_is_the_byte_level_alphabet():
    from prep.tokenizer.pretokenize import BYTE_SYMBOLS, from_symbols, to_symbols

    assert sorted(BYTE_SYMBOLS) == sorted(byte_alphabet())
    text = "naïve 中文 \x00\n👍🏽"
    assert "".join(pre_tokens(text)) == to_symbols(text)
    assert from_symbols(to_symbols(text)).decode() == text
