"""Hard-wrapped text read by its paragraphs: the lines a text wrapper made joined back into the lines
their author wrote, for the rules that count lines (FineWeb's, with `fineweb.reflow`).

The line rules were made for web text, where a line is a paragraph, a heading or a list item. Text
editions of manuals, RFCs, info manuals and man pages on a terminal are wrapped at 70-80 columns: a
paragraph is many lines and only its last ends like a sentence (a Chinese one breaks between any two
characters), so the share of lines that end like sentences falls with every line a paragraph takes,
and depends on where the lines were broken rather than on the text.

A wrapper breaks a line only where the next word does not fit, so that is the test: a line goes on
into the next when the next line's first word would not have fit in the columns the line leaves of
the text's wrap width (the width its long lines reach), both lines have letters or CJK punctuation (a
table's rules stay lines) and the next is not the same line again (a wrapper never repeats one; junk does). A line that
ends short of the margin ends where its author ended it: a heading, an option, a list item, a
paragraph's last line. Text whose long lines are wider than a terminal's or narrower than any
wrapper's is not wrapped and comes back as it is, as does text with hardly any full lines. Joining
keeps every word and every blank line (a space between the joined lines, none between two Han or
kana characters), so words and paragraphs count as they did.
"""

import functools
import re

from prep.cjk import HAN_KANA, HANGUL, char_class

# East Asian wide and fullwidth characters: two columns on a terminal (what wcwidth gives them).
WIDE = re.compile("[" + char_class(HAN_KANA + HANGUL + ((0x2E80, 0x303E), (0x3100, 0x33FF), (0xFE30, 0xFE4F),
                                                         (0xFF00, 0xFF60), (0xFFE0, 0xFFE6))) + "]")
HAN_OR_KANA = re.compile(f"[{char_class(HAN_KANA)}]")  # joined without a space: words as the rules split them
LETTER = re.compile(r"[^\W\d_]")
MIN_WRAP, MAX_WRAP = 40, 160  # wrap widths in columns that text wrappers use (72-80 mostly)
WRAP_QUANTILE = 0.9  # the wrap width: the width this share of the lines stays within
MIN_FULL_SHARE = 0.05  # fewer full lines than this share of its lines: the text is not wrapped


def width(line: str) -> int:
    """Columns on a terminal."""
    return len(line) if line.isascii() else len(line) + len(WIDE.findall(line))


def _wide(char: str) -> bool:
    return not char.isascii() and WIDE.match(char) is not None


def _wraps_into(line: str, line_width: int, following: str, wrap: int) -> bool:
    """Whether a wrapper broke `line` because `following`'s first word did not fit."""
    first = following.split(None, 1)[0]
    gap = 0 if _wide(line[-1]) and _wide(first[0]) else 1
    # The word up to a space: groff breaks Chinese only there, w3m between any two characters (then
    # the line is full anyway). A line left more than half empty is an author's (a heading, an
    # option), whatever follows it.
    return (2 * line_width >= wrap and line_width + gap + width(first) > wrap
            and LETTER.search(line) is not None and (LETTER.search(following) is not None or _wide(first[0]))
            # a wrapper never repeats a line: a line that does is junk or layout, what the line rules look for
            and line.strip() != following.strip())


@functools.lru_cache(maxsize=8)  # the line rules read the same document's paragraphs
def reflowed(text: str) -> str:
    """`text` with each run of hard-wrapped lines joined into one line; text not wrapped as it is."""
    pieces = text.split("\n")
    widths = [width(p.rstrip()) for p in pieces]
    measured = sorted(w for w, p in zip(widths, pieces) if p.strip())
    if len(measured) < 3:
        return text
    wrap = measured[min(len(measured) - 1, int(WRAP_QUANTILE * len(measured)))]
    if not MIN_WRAP <= wrap <= MAX_WRAP:
        return text
    joins = [bool(line.strip()) and bool(following.strip()) and
             _wraps_into(line.rstrip(), widths[i], following, wrap)
             for i, (line, following) in enumerate(zip(pieces, pieces[1:]))]
    if sum(joins) < MIN_FULL_SHARE * len(measured):
        return text
    # each output line's pieces joined once (stripping the whole line joined so far at each join cost its length
    # squared: 263 s for 5.9 MB of lines ending in U+3000, which normalization leaves)
    out, parts = [], [pieces[0]]
    for joined, following in zip(joins, pieces[1:]):
        if not joined:
            out.append("".join(parts))
            parts = [following]
            continue
        parts[-1] = parts[-1].rstrip()
        following = following.lstrip()
        parts.append(("" if HAN_OR_KANA.match(parts[-1][-1]) and HAN_OR_KANA.match(following[0]) else " ")
                     + following)
    out.append("".join(parts))
    return "\n".join(out)
