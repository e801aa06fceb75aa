"""Words, lines and sentences as the quality rules count them.

Words are whitespace-separated tokens, as in the Gopher paper (punctuation is not split off: a
tokenizer that splits it makes most technical prose fail the alphabetic-word rule). For text
without spaces (Chinese, Japanese) each Han or kana character counts as a word, so the same rules
apply with character-based thresholds (as FineWeb-2 does for Chinese, where a word is short).
"""

import functools
import re

from prep.cjk import HAN_KANA, char_class

CJK_CHARS = char_class(HAN_KANA)
CJK_OR_RUN = re.compile(f"[{CJK_CHARS}]|[^{CJK_CHARS}]+")
CJK_CHAR = re.compile(f"[{CJK_CHARS}]")

# Datatrove's and FineWeb's sentence-ending marks, Latin and CJK.
TERMINAL_PUNCTUATION = tuple(".!?\"'”’»)]」』。！？…；;:")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


LETTER_RUN = re.compile(r"[^\W\d_]+")


def cjk_fraction(text: str) -> float:
    """Han and kana characters among all letters."""
    letters = sum(map(len, LETTER_RUN.findall(text)))
    return len(CJK_CHAR.findall(text)) / letters if letters else 0.0


@functools.lru_cache(maxsize=8)  # every rule asks for the same document's words; str caches its hash
def words(text: str, char_based: bool) -> list[str]:
    """Do not modify the returned list: it is shared between the rules."""
    tokens = text.split()
    if not char_based:
        return tokens
    return [piece for token in tokens for piece in CJK_OR_RUN.findall(token)]


def lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text) if s.strip()]


LETTER = re.compile(r"[^\W\d_]")


def has_alpha(word: str) -> bool:
    return LETTER.search(word) is not None
