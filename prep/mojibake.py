"""ftfy's mojibake detector (`ftfy.badness.is_bad`), the same answer at a fraction of the cost.

ftfy's detector is one regular expression of ~37 alternatives tried at every character: most of
the cleaning time of non-English text. Every alternative needs one of ~450 characters (accented
Latin, cp1252 punctuation, box drawing, some Greek and Cyrillic) and is at most 7 characters long,
so a match can only lie within 7 characters of one of them: the cheap search for those characters
comes first and the detector runs only on the windows around them. The characters and the width
are read from ftfy's own expression at import; when its shape is not the one this relies on (a
later ftfy), `is_bad` is ftfy's.
"""

import re
from re import _parser

import ftfy.badness

BADNESS = getattr(ftfy.badness, "BADNESS_RE", None)  # ftfy 6.x's; another ftfy: its own is_bad


def _characters(node) -> set[int] | None:
    """The characters a mandatory element matches, or None when it can match others (\\w, a negation)."""
    op, av = node
    if op is _parser.LITERAL:
        return {av}
    if op is _parser.IN:
        chars = set()
        for item_op, item in av:
            if item_op is _parser.LITERAL:
                chars.add(item)
            elif item_op is _parser.RANGE:
                chars.update(range(item[0], item[1] + 1))
            else:
                return None
        return chars
    return None


def _marks_and_width() -> tuple[str, int] | None:
    """(a character class of every character some alternative cannot match without, the longest
    match), or None when an alternative has no such non-ASCII element or the expression has another shape."""
    if not isinstance(BADNESS, re.Pattern) or BADNESS.flags & re.IGNORECASE:
        return None
    tree = list(_parser.parse(BADNESS.pattern, BADNESS.flags))
    if len(tree) != 1 or tree[0][0] is not _parser.BRANCH:
        return None
    marks, width = set(), 0
    for alternative in tree[0][1][1]:
        needed = [chars for node in alternative if (chars := _characters(node)) and min(chars) >= 0x80]
        if not needed or alternative.getwidth()[1] > 16:
            return None
        marks |= needed[0]
        width = max(width, alternative.getwidth()[1])
    return "[" + "".join(re.escape(chr(c)) for c in sorted(marks)) + "]", width


_SHAPE = _marks_and_width()
MARKS = re.compile(_SHAPE[0]) if _SHAPE else None
WIDTH = _SHAPE[1] if _SHAPE else 0


def is_bad(text: str) -> bool:
    """ftfy.badness.is_bad(text), searching only around the characters every match needs."""
    if MARKS is None:
        return ftfy.badness.is_bad(text)
    end = -1  # the end of the window searched last
    for mark in MARKS.finditer(text):
        at = mark.start()
        if at < end:
            continue  # inside the window just searched
        start, end = max(0, at - WIDTH + 1), at + WIDTH
        # Grow the window over marks close together, so dense text costs one search, not one per mark.
        while (more := MARKS.search(text, end - WIDTH + 1, end + WIDTH)) is not None:
            end = more.start() + WIDTH
        if BADNESS.search(text, start, end):
            return True
    return False
