"""Words, lines and sentences as the quality rules count them.

Words are whitespace-separated tokens, as in the Gopher paper (punctuation is not split off: a
tokenizer that splits it makes most technical prose fail the alphabetic-word rule). For text
without spaces (Chinese, Japanese) each Han or kana character counts as a word, so the same rules
apply with character-based thresholds (as FineWeb-2 does for Chinese, where a word is short).

What the rules count of words and lines (how many, their lengths, which have a letter, a hash of
each, the CJK share) comes from compiled passes over the text's code points, with a table of the
character classes the patterns use (tests/prep/test_fast_equivalents.py holds them to the patterns).
"""

import functools
import re
from dataclasses import dataclass

import numpy as np

from prep.cjk import HAN_KANA, char_class
from prep.compiled import kernel

CJK_CHARS = char_class(HAN_KANA)
# One Han or kana character, or a run of other characters up to white space: what splitting on white
# space and then each piece into its Han and kana characters and the runs between them gives.
CJK_OR_RUN = re.compile(f"[{CJK_CHARS}]|[^{CJK_CHARS}\\s]+")

# Datatrove's and FineWeb's sentence-ending marks, Latin and CJK.
TERMINAL_PUNCTUATION = tuple(".!?\"'”’»)]」』。！？…；;:")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


SPACE, LETTER, CJK = 1, 2, 4  # a code point's classes (character_classes)


@functools.cache
def character_classes() -> np.ndarray:
    """A byte per code point: SPACE where the rules' patterns see \\s (str.split's white space),
    LETTER where they see [^\\W\\d_], CJK for Han and kana; found by the patterns themselves, so the
    compiled counts below agree with them by construction (~0.25 s, once per process)."""
    every = np.arange(0x110000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")  # no str per character
    classes = np.zeros(0x110000, np.uint8)
    for bit, pattern in ((SPACE, r"\s"), (LETTER, r"[^\W\d_]")):
        classes[np.fromiter((m.start() for m in re.finditer(pattern, every)), np.int64)] |= bit
    for lo, hi in HAN_KANA:
        classes[lo:hi + 1] |= CJK
    return classes


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)


def cjk_fraction(text: str) -> float:
    """Han and kana characters among all letters."""
    if text.isascii():
        return 0.0
    cjk, letters = _cjk_and_letters(_code_points(text), character_classes())
    return cjk / letters if letters else 0.0


@kernel
def _cjk_and_letters(code_points, classes):
    cjk = letters = 0
    for c in code_points:
        kind = classes[c]
        cjk += (kind & CJK) != 0
        letters += (kind & LETTER) != 0
    return cjk, letters


@functools.lru_cache(maxsize=8)  # every rule asks for the same document's words; str caches its hash
def words(text: str, char_based: bool) -> list[str]:
    """Do not modify the returned list: it is shared between the rules."""
    return CJK_OR_RUN.findall(text) if char_based else text.split()


def first_words(text: str, char_based: bool, count: int) -> list[str]:
    """words(text, char_based)[:count], without splitting the rest."""
    if not char_based:
        return text.split(None, count)[:count]  # past `count` splits the rest is one piece, left out
    prefix = 4 * count + 16
    while True:
        # Only the last word of a prefix can be cut short: more than `count` words, and the first are whole.
        found = CJK_OR_RUN.findall(text, 0, prefix)
        if len(found) > count or prefix >= len(text):
            return found[:count]
        prefix *= 2


@dataclass(frozen=True)
class WordStats:
    """What the rules count of words(text, char_based), from one compiled pass over the code points."""
    count: int
    chars: int  # characters in words
    with_letters: int  # words with a letter
    hashes: np.ndarray  # uint64 [count]: a 64-bit hash of each word's code points
    lengths: np.ndarray  # int64 [count]: each word's characters


@functools.lru_cache(maxsize=8)
def word_stats(text: str, char_based: bool) -> WordStats:
    hashes, lengths, with_letters = _word_stats(_code_points(text), character_classes(), char_based)
    return WordStats(len(hashes), int(lengths.sum()), with_letters, hashes, lengths)


@kernel
def _word_end(code_points, classes, char_based, i):
    """Where the word starting at code point i (not white space) ends: a Han or kana character is a
    word of its own with char_based; any other runs up to white space (or, with char_based, Han and kana)."""
    if char_based and (classes[code_points[i]] & CJK) != 0:
        return i + 1
    stop = SPACE | CJK if char_based else SPACE
    end = i + 1
    while end < len(code_points) and (classes[code_points[end]] & stop) == 0:
        end += 1
    return end


@kernel
def _word_stats(code_points, classes, char_based):
    """The words of str.split() (runs of non-space), or with char_based of CJK_OR_RUN (each Han or
    kana character, and runs of the rest between white space and them): FNV-1a hashes of their code
    points, lengths, and how many have a letter."""
    n = len(code_points)
    hashes, lengths = np.empty(n, np.uint64), np.empty(n, np.int64)
    count = with_letters = 0
    i = 0
    while i < n:
        kind = classes[code_points[i]]
        if kind & SPACE:
            i += 1
            continue
        end = _word_end(code_points, classes, char_based, i)
        h, letter = np.uint64(0xCBF29CE484222325), False
        for k in range(i, end):
            h = (h ^ np.uint64(code_points[k])) * np.uint64(0x100000001B3)
            letter |= (classes[code_points[k]] & LETTER) != 0
        hashes[count], lengths[count] = h, end - i
        count += 1
        with_letters += letter
        i = end
    return hashes[:count].copy(), lengths[:count].copy(), with_letters  # not the buffers sized for every character


def line_words(text: str, char_based: bool) -> tuple[np.ndarray, np.ndarray]:
    """For each piece of text.split("\\n"): (how many words of words(piece, char_based), the longest's characters)."""
    return _line_words(_code_points(text), character_classes(), char_based, text.count("\n") + 1)


@kernel
def _line_words(code_points, classes, char_based, pieces):
    counts, longest = np.zeros(pieces, np.int64), np.zeros(pieces, np.int64)
    line = i = 0  # "\n" is white space: a word ends at its line's end
    while i < len(code_points):
        if code_points[i] == 10:
            line += 1
            i += 1
            continue
        kind = classes[code_points[i]]
        if kind & SPACE:
            i += 1
            continue
        end = _word_end(code_points, classes, char_based, i)
        counts[line] += 1
        longest[line] = max(longest[line], end - i)
        i = end
    return counts, longest


@functools.lru_cache(maxsize=8)  # the repetition and quality rules read the same document's lines
def lines(text: str) -> list[str]:
    """Do not modify the returned list: it is shared between the rules."""
    return [line for line in text.split("\n") if line.strip()]


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def has_words(line: str) -> bool:
    """Whether a line holds a letter or a digit: one without (a table's border, a rule, a lone brace) is
    the layout's, and repeats in a table of twenty rows without repeating a word."""
    return any(map(str.isalnum, line))


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text) if s.strip()]


def count_sentences(text: str, enough: int) -> int:
    """len(sentences(text)), or `enough` as soon as that many are found (the rest is not read)."""
    count, start = 0, 0
    for end in SENTENCE_END.finditer(text):
        if text[start:end.start()].strip():
            count += 1
            if count >= enough:
                return count
        start = end.end()
    return count + bool(text[start:].strip())
