"""The cleaning steps made fast answer as the plain versions they replaced, on text made of the very
characters they look for: the address substitutions tried only near their hints (prep/pii.py), and
the words, their letters, lengths and hashes and the CJK share counted by one compiled pass over the
code points (prep/quality/text_units.py)."""

import random
import re

import pytest

from prep.pii import IPV4, IPV4_HINT, IPV4_REACH, IPV6, IPV6_HINT, IPV6_REACH, PiiConfig, _ip_replacer, _sub_near_hints
from prep.quality.text_units import (
    CJK_CHARS,
    cjk_fraction,
    first_words,
    line_words,
    word_stats,
    words,
)
from tests.fuzz_text import hostile_strings


def random_texts(pool: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 30))) for _ in range(count)]


@pytest.mark.parametrize("only_public", [True, False])
def test_addresses_are_replaced_as_the_plain_substitution_replaces_them(only_public):
    replace = _ip_replacer(PiiConfig(only_public_ips=only_public))
    pool = list("0123456789abcdefABCDEF:.:. x-") + ["::", "1.2.3.4", "255.", "::1", "fe80::", "8.8.8.8", "2001:db8::1"]
    changed = 0
    for text in random_texts(pool, 30_000, 1) + hostile_strings(3000, 2):
        v4 = IPV4.sub(replace, text)
        assert _sub_near_hints(IPV4, IPV4_HINT, IPV4_REACH, replace, text) == v4, text
        v6 = IPV6.sub(replace, v4)
        assert _sub_near_hints(IPV6, IPV6_HINT, IPV6_REACH, replace, v4) == v6, v4
        changed += v6 != text
    assert changed > 1000  # addresses were there to replace


@pytest.mark.parametrize("char_based", [False, True])
def test_words_with_a_letter_are_counted_as_word_by_word(char_based):
    letter = re.compile(r"[^\W\d_]")
    old_pieces = re.compile(f"[{CJK_CHARS}]|[^{CJK_CHARS}]+")
    pool = list("ab1_.!- \n中ー・゙\u3040〇々\ufa6e²") + ["\u00a0", "\u3000", "\x1c"]
    for text in random_texts(pool, 30_000, 3) + hostile_strings(3000, 4):
        pieces = [p for token in text.split() for p in old_pieces.findall(token)] if char_based else text.split()
        assert words(text, char_based) == pieces, text
        assert word_stats(text, char_based).with_letters == sum(letter.search(w) is not None for w in pieces), text


POOL = list("ab1_.!- \n中ー・゙\u3040〇々\ufa6e²ÉéΣσς") + ["\u00a0", "\u3000", "\x1c", "\U00020000", "\u2028"]


@pytest.mark.parametrize("char_based", [False, True])
def test_word_statistics_are_those_of_the_word_list(char_based):
    """Counts and lengths as the list gives them; equal words hash equal, different words apart."""
    seen: dict[int, str] = {}
    for text in random_texts(POOL + ["word", "Word", "words"], 20_000, 5) + hostile_strings(2000, 6):
        listed, stats = words(text, char_based), word_stats(text, char_based)
        assert (stats.count, stats.chars) == (len(listed), sum(map(len, listed))), text
        assert stats.lengths.tolist() == [len(w) for w in listed], text
        for word, h in zip(listed, stats.hashes.tolist()):
            assert seen.setdefault(h, word) == word, (word, seen[h])
        for count in (0, 1, 3, 1000):
            assert first_words(text, char_based, count) == listed[:count], (text, count)
    assert len(seen) > 5000  # many different words were hashed


@pytest.mark.parametrize("char_based", [False, True])
def test_each_lines_words_are_counted_as_its_word_list(char_based):
    long_lines = 0
    for text in random_texts(POOL + ["x" * 40], 20_000, 9) + hostile_strings(2000, 10):
        counts, longest = line_words(text, char_based)
        pieces = [words(piece, char_based) for piece in text.split("\n")]
        assert counts.tolist() == [len(p) for p in pieces], text
        assert longest.tolist() == [max(map(len, p), default=0) for p in pieces], text
        long_lines += int(longest.max()) >= 40
    assert long_lines > 100


def test_the_cjk_share_is_the_patterns_count():
    cjk, letter = re.compile(f"[{CJK_CHARS}]"), re.compile(r"[^\W\d_]")
    for text in random_texts(POOL, 20_000, 7) + hostile_strings(2000, 8):
        letters = len(letter.findall(text))
        assert cjk_fraction(text) == (len(cjk.findall(text)) / letters if letters else 0.0), text
