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
# One Han or kana character, or a run of other characters up to white space: what splitting on white
# space and then each piece into its Han and kana characters and the runs between them gives.
CJK_OR_RUN = re.compile(f"[{CJK_CHARS}]|[^{CJK_CHARS}\\s]+")
CJK_CHAR = re.compile(f"[{CJK_CHARS}]")

# Datatrove's and FineWeb's sentence-ending marks, Latin and CJK.
TERMINAL_PUNCTUATION = tuple(".!?\"'”’»)]」』。！？…；;:")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


LETTER_RUN = re.compile(r"[^\W\d_]+")


def cjk_fraction(text: str) -> float:
    """Han and kana characters among all letters."""
    if text.isascii():
        return 0.0
    letters = sum(map(len, LETTER_RUN.findall(text)))
    return len(CJK_CHAR.findall(text)) / letters if letters else 0.0


@functools.lru_cache(maxsize=8)  # every rule asks for the same document's words; str caches its hash
def words(text: str, char_based: bool) -> list[str]:
    """Do not modify the returned list: it is shared between the rules."""
    return CJK_OR_RUN.findall(text) if char_based else text.split()


def lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


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


# Words without a letter ([^\W\d_]), found in the text instead of word by word (\s is the white space
# str.split splits on): a run of digits, underscores and other non-space non-word characters between
# white space; for character-based words also one non-letter character of the Han and kana blocks (a
# mark, a middle dot), and a run of others between white space and those blocks' characters.
NO_LETTER_WORD = re.compile(r"(?<!\S)(?:[\d_]|[^\w\s])+(?!\S)")
NO_LETTER_PIECE = re.compile(f"(?=[{CJK_CHARS}])[\\W\\d_]"
                             f"|(?<![^\\s{CJK_CHARS}])(?:[\\d_]|[^\\w\\s{CJK_CHARS}])+(?![^\\s{CJK_CHARS}])")


def words_with_letters(text: str, char_based: bool) -> int:
    """How many of words(text, char_based) have a letter, without looking at each."""
    return len(words(text, char_based)) - len((NO_LETTER_PIECE if char_based else NO_LETTER_WORD).findall(text))
