"""Words, lines and sentences as the quality rules count them.

Words are whitespace-separated tokens, as in the Gopher paper (punctuation is not split off: a
tokenizer that splits it makes most technical prose fail the alphabetic-word rule). For text
without spaces (Chinese, Japanese) each Han or kana character counts as a word, so the same rules
apply with character-based thresholds (as FineWeb-2 does for Chinese, where a word is short).
"""

import re

CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
CJK_OR_RUN = re.compile(f"[{CJK_CHARS}]|[^{CJK_CHARS}]+")
CJK_CHAR = re.compile(f"[{CJK_CHARS}]")

# Datatrove's and FineWeb's sentence-ending marks, Latin and CJK.
TERMINAL_PUNCTUATION = tuple(".!?\"'”’»)]」』。！？…；;:")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def cjk_fraction(text: str) -> float:
    letters = sum(1 for c in text if c.isalpha())
    return len(CJK_CHAR.findall(text)) / letters if letters else 0.0


def words(text: str, char_based: bool) -> list[str]:
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


def has_alpha(word: str) -> bool:
    return any(c.isalpha() for c in word)
