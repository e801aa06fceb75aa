"""Text normalization for deduplication and the units shingles are made of.

One rule for every script: after normalization (NFKC per character, lower case, punctuation, symbols and controls
removed, digits folded to 0, whitespace collapsed) a *unit* is a whitespace-separated word, except
that every Han, kana or Hangul character is a unit of its own. A shingle is n consecutive units:
word n-grams for English, character n-grams for Chinese, and both at once for mixed text. A document
with fewer than n units is one shingle of all its units, so short documents are compared, never
dropped.
"""

import unicodedata

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
