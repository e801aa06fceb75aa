"""prep/classify/text.py: the one line a classifier reads of a document, on real documents of the sample:
lowercase, digits of any script as 0, a CJK character a token, line and paragraph breaks as tokens, at most
max_tokens tokens; and a sentence's content words."""

import re

import pytest

from prep.classify.text import content_words, model_line
from tests.shard_fixtures import sample_texts

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")



@pytest.fixture(scope="module")
def documents() -> list[str]:
    """Real documents in English and Chinese: the FAQ and the handbook of the sample."""
    return sample_texts(["debian-faq.en", "debian-faq.zh", "debian-handbook.en", "debian-handbook.zh"])


def text_tokens(line: str) -> list[str]:
    return line.split(" ") if line else []


def test_the_line_is_lowercase_space_separated_and_has_no_line_break(documents):
    for text in documents:
        line = model_line(text, 1024)
        assert line == line.lower()
        assert "\n" not in line and "\r" not in line
        assert line == " ".join(line.split()), "tokens separated by single spaces, no empty token"
    assert model_line("Debian GNU/Linux Is FREE", 10) == "debian gnu / linux is free"


def test_every_digit_is_read_as_0(documents):
    with_digits = [text for text in documents if re.search(r"[1-9]", text)]
    assert len(with_digits) > 50
    for text in with_digits:
        assert not re.search(r"[1-9]", " ".join(text_tokens(model_line(text, 1024))))
    assert text_tokens(model_line("Debian 12.4 was released in 2024", 20)) == \
        ["debian", "00", ".", "0", "was", "released", "in", "0000"]


def test_every_script_s_digits_are_read_as_0():
    """A number's length, not its value, whatever its digits: full-width ones (common in Chinese and
    Japanese text, which NFC leaves as they are) and Arabic-Indic ones are digits of a word too."""
    assert text_tokens(model_line("２０２４年１２月 ١٢٣ v3", 20)) == ["0000", "年", "00", "月", "000", "v0"]


def test_a_cjk_character_is_a_token_of_its_own(documents):
    chinese = [text for text in documents if len(CJK.findall(text)) > 100]
    assert len(chinese) > 20
    for text in chinese:
        tokens = text_tokens(model_line(text, 10**6))
        assert sum(bool(CJK.search(t)) for t in tokens) > 100
        assert all(len(t) == 1 for t in tokens if CJK.search(t)), [t for t in tokens if CJK.search(t) and len(t) > 1]
    assert text_tokens(model_line("Debian软件包 ひらがなカタカナ 한국어 abc", 20)) == \
        ["debian", "软", "件", "包", "ひ", "ら", "が", "な", "カ", "タ", "カ", "ナ", "한", "국", "어", "abc"]


def test_line_and_paragraph_breaks_are_tokens():
    assert text_tokens(model_line("one\ntwo\n\nthree\r\nfour\r\n\r\nfive\n \t\n\n six", 50)) == \
        ["one", "↵", "two", "¶", "three", "↵", "four", "¶", "five", "¶", "six"]


def test_breaks_of_real_documents(documents):
    text = next(t for t in documents if t.count("\n\n") > 5 and t.count("\n") > t.count("\n\n") * 2 + 5)
    tokens = text_tokens(model_line(text, 100_000))
    paragraphs = len([p for p in re.split(r"\n[^\S\n]*\n\s*", text.strip()) if p.strip()])
    assert tokens.count("¶") == paragraphs - 1
    assert tokens.count("↵") == text.strip().count("\n") - sum(
        m.group().count("\n") for m in re.finditer(r"\n[^\S\n]*\n\s*", text.strip()))


@pytest.fixture(scope="module")
def every_token(documents) -> list[list[str]]:
    return [text_tokens(model_line(text, 10**9)) for text in documents]


@pytest.mark.parametrize("max_tokens", [1, 7, 64, 1024])
def test_at_most_max_tokens_tokens_of_text(documents, every_token, max_tokens):
    longer = 0
    for text, everything in zip(documents, every_token):
        assert text_tokens(model_line(text, max_tokens)) == everything[:max_tokens]
        longer += len(everything) > max_tokens
    assert longer > 10


def test_a_sentences_content_words():
    assert content_words("the package manager installs packages from this mirror") == {"packa", "manag", "insta",
                                                                                         "mirro"}
    assert content_words("软件包管理") == {"软件", "件包", "包管", "管理"}
