"""The cleaning steps made fast answer as the plain versions they replaced, on text made of the very
characters they look for: the address substitutions tried only near their hints (prep/pii.py) and
the words without a letter counted in the text (prep/quality/text_units.py)."""

import random
import re

import pytest

from prep.pii import IPV4, IPV4_HINT, IPV4_REACH, IPV6, IPV6_HINT, IPV6_REACH, PiiConfig, _ip_replacer, _sub_near_hints
from prep.quality.text_units import CJK_CHARS, words, words_with_letters
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
        assert words_with_letters(text, char_based) == sum(letter.search(w) is not None for w in pieces), text
