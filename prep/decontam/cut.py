"""Cutting matched spans out of a document: the span and a window either side, the rest kept as one
document.

The window (200 characters by default, as the GPT-3 rule) is widened to word boundaries, so no
word is cut in half: a boundary never falls between two letters or digits of a word written with
spaces (a CJK character is a word of its own). Overlapping cuts become one. What is left either
side of a cut is trimmed of the white space at the cut and the pieces are joined by a paragraph break,
so the document's own paragraphs stay as they were.
"""

from dataclasses import dataclass

from prep.cjk import HAN_KANA, HANGUL, in_ranges

PIECE_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class CutConfig:
    """What goes with a match, and when what is left is not worth keeping."""
    window: int = 200  # characters either side of a match cut with it (widened to word boundaries)
    min_chars: int = 200  # a document left with fewer characters is dropped (reason too_short_after_removal)
    max_spans: int = 10  # a document with more matches is dropped (reason too_many_matches)

    def __post_init__(self):
        if self.window < 0 or self.min_chars < 0 or self.max_spans < 1:
            raise ValueError(f"need window >= 0, min_chars >= 0, max_spans >= 1, got {self.window}, {self.min_chars}, "
                             f"{self.max_spans}")


def _in_word(c: str) -> bool:
    return c.isalnum() and not in_ranges(ord(c), HAN_KANA + HANGUL)


def _joined(text: str, i: int) -> bool:
    """Whether position i (between text[i - 1] and text[i]) is inside a word."""
    return 0 < i < len(text) and _in_word(text[i - 1]) and _in_word(text[i])


def cut_ranges(text: str, spans: list[tuple[int, int]], window: int) -> list[tuple[int, int]]:
    """The ranges of `text` to remove for the matched `spans`: each widened by `window` and out to word
    boundaries, overlapping ones merged, in order."""
    ranges = []
    for begin, end in sorted(spans):
        b, e = max(0, begin - window), min(len(text), end + window)
        # widened no further than the last range's end, a boundary already: many spans inside one long word
        # (units a word's letters can hold, "aŀbŀc...") each walked it whole, 41 s for a 28 KB document
        covered = ranges[-1][1] if ranges else 0
        while b > covered and _joined(text, b):
            b -= 1
        if e <= covered:
            e = covered
        while _joined(text, e):
            e += 1
        if ranges and b <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(e, ranges[-1][1]))
        else:
            ranges.append((b, e))
    return ranges


def without(text: str, ranges: list[tuple[int, int]]) -> str:
    """`text` with `ranges` (cut_ranges) removed, the pieces left joined by a paragraph break."""
    pieces, at = [], 0
    for b, e in ranges:
        pieces.append(text[at:b])
        at = e
    pieces.append(text[at:])
    trimmed = [p.rstrip() if i == 0 else p.lstrip() if i == len(pieces) - 1 else p.strip()
               for i, p in enumerate(pieces)]
    return PIECE_SEPARATOR.join(p for p in trimmed if p)
