"""Text normalization for deduplication and the units shingles are made of.

One rule for every script: after normalization (lower case, punctuation and symbols removed, digits
folded to 0, whitespace collapsed) a *unit* is a whitespace-separated word, except that every Han,
kana or Hangul character is a unit of its own. A shingle is n consecutive units: word n-grams for
English, character n-grams for Chinese, and both at once for mixed text. A document with fewer than
n units is one shingle of all its units, so short documents are compared, never dropped.
"""

import re
import unicodedata

CJK_CHARS = "\u1100-\u11ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff"
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
# Everything that is not a letter, digit, mark or CJK character becomes a space.
NOT_WORD = re.compile(r"[\W_]+")
# The same rule for ASCII as one str.translate: punctuation and controls to spaces, digits to 0.
ASCII_TABLE = str.maketrans({chr(c): "0" if chr(c).isdigit() else " " for c in range(128) if not chr(c).isalpha()})
DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")


def normalize_for_dedup(text: str) -> str:
    """Units separated by single spaces: the text that shingles and exact hashes are taken from."""
    if text.isascii():  # the common case, without regular expressions
        return " ".join(text.lower().translate(ASCII_TABLE).split())
    text = unicodedata.normalize("NFKC", text).lower()
    text = NOT_WORD.sub(" ", text).translate(DIGITS_TO_ZERO)  # NFKC already made other digits ASCII
    text = CJK_RUN.sub(_spaced, text)  # one call per run of CJK characters, not per character
    return " ".join(text.split())


def _spaced(run: re.Match) -> str:
    return " " + " ".join(run.group()) + " "


def units(text: str) -> list[str]:
    return normalize_for_dedup(text).split(" ") if text.strip() else []


def shingles(text: str, n: int) -> list[str]:
    """The shingles of a document as strings of units joined by spaces (duplicates removed, in order)."""
    parts = units(text)
    if len(parts) < n:
        return [" ".join(parts)]
    return list(dict.fromkeys(" ".join(parts[i : i + n]) for i in range(len(parts) - n + 1)))
