"""Text normalization for deduplication and the units shingles are made of.

One rule for every script: after normalization (NFKC per character, lower case, punctuation, symbols and controls
removed, digits folded to 0, whitespace collapsed) a *unit* is a whitespace-separated word, except
that every Han, kana or Hangul character is a unit of its own. A shingle is n consecutive units:
word n-grams for English, character n-grams for Chinese, and both at once for mixed text. A document
with fewer than n units is one shingle of all its units, so short documents are compared, never
dropped.
"""

import unicodedata

import numpy as np

from prep.cjk import HAN_KANA, HANGUL, in_ranges

CJK_RANGES = HAN_KANA + HANGUL


def _unit_char(ch: str) -> str:
    """What one character becomes: the whole normalization rule, character by character.

    NFKC is applied per character (full-width forms, ligatures, circled digits...), not per string:
    cleaning has already composed the text (NFC), and a per-character rule fits one translate table.
    """
    out = []
    for c in unicodedata.normalize("NFKC", ch):
        cp = ord(c)
        if in_ranges(cp, CJK_RANGES):
            out.append(f" {c} ")
        elif unicodedata.category(c) == "Nd":
            out.append("0")
        elif unicodedata.category(c)[0] in "PSZC" or c == "_":
            out.append(" ")
        else:
            out.append(c.lower())
    return "".join(out)


class _CharTable(dict):
    """A str.translate table that fills itself: each distinct character is worked out once, then
    every later lookup is a C-level dict hit."""

    def __missing__(self, cp: int) -> str:
        self[cp] = _unit_char(chr(cp))
        return self[cp]


CHAR_TABLE = _CharTable()
# ASCII, the common case, as a 256-byte table for bytes.translate (lower case included).
ASCII_TABLE = bytes(ord(_unit_char(chr(c))) if len(_unit_char(chr(c))) == 1 else 32 for c in range(128)) + bytes(
    range(128, 256))


class CodePointTable:
    """`_unit_char` of every code point as flat arrays a compiled pass reads: code point c becomes
    data[start[c]:start[c] + length[c]], a space (0x20) wherever units are separated. Filled lazily,
    each batch's new code points at a time (all of Unicode would take seconds); length 0 means not yet."""

    def __init__(self):
        self.start = np.zeros(0x110000, np.int32)
        self.length = np.zeros(0x110000, np.uint8)
        self.data = np.zeros(1 << 12, np.uint32)
        self.used = 0
        self.cover(np.arange(256, dtype=np.uint32))

    def cover(self, code_points: np.ndarray) -> None:
        """Makes sure every code point of the array has its entry."""
        for cp in np.unique(code_points[self.length[code_points] == 0]).tolist():
            out = [ord(c) for c in _unit_char(chr(cp))]
            if self.used + len(out) > len(self.data):
                self.data = np.resize(self.data, 2 * (self.used + len(out)))
            self.data[self.used:self.used + len(out)] = out
            self.start[cp], self.length[cp] = self.used, len(out)
            self.used += len(out)


def normalize_bytes(text: str) -> bytes:
    """The normalized text as UTF-8, units separated by single spaces."""
    if text.isascii():
        return b" ".join(text.encode("ascii").translate(ASCII_TABLE).split())
    return " ".join(text.translate(CHAR_TABLE).split()).encode("utf-8")


def normalize_for_dedup(text: str) -> str:
    return normalize_bytes(text).decode("utf-8")


def units(text: str) -> list[str]:
    normalized = normalize_for_dedup(text)
    return normalized.split(" ") if normalized else []


def shingles(text: str, n: int) -> list[str]:
    """The shingles of a document as strings of units joined by spaces (duplicates removed, in order)."""
    parts = units(text)
    if len(parts) < n:
        return [" ".join(parts)]
    return list(dict.fromkeys(" ".join(parts[i : i + n]) for i in range(len(parts) - n + 1)))
