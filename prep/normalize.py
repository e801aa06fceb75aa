"""Text normalization: Unicode NFC, mojibake repair, control characters, whitespace; and what it changed in a
text, for a person to look at."""

import difflib
import re
import unicodedata
from dataclasses import dataclass

import ftfy

from prep import mojibake


@dataclass
class NormalizeConfig:
    fix_mojibake: bool = True  # ftfy: repairs UTF-8 read as Latin-1/cp1252 and similar
    nfc: bool = True  # canonical composition, so the same text has one spelling
    remove_control_chars: bool = True  # C0/C1 controls (tabs and newlines kept), BOMs, terminal escapes
    tidy_whitespace: bool = True  # unify line endings and exotic spaces, trim lines, cap blank lines at one
    # soft hyphens, zero-width spaces and word joiners: invisible on the page, they cut the words they sit in
    # into pieces for the tokenizer ("Mit\xadtel\xadal\xadter"); ZWNJ and ZWJ, which spell Persian, Indic
    # scripts and emoji, stay
    remove_invisible: bool = True


CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff\ufffe]")
TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
EXOTIC_SPACE = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f]")
TRAILING_SPACE = re.compile(r"(?<![ \t])[ \t]+\n")  # from a run's start only: tried inside 160k spaces, 31 s
BLANK_LINES = re.compile(r"\n{3,}")
INVISIBLE = re.compile("[\u00ad\u200b\u2060]")


MAX_CHANGES = 5  # changes of a text recorded, the first ones
CHANGE_CHARS = 200  # characters of a change's before and after recorded
CONTEXT_CHARS = 40  # characters of the text on either side of a change
WINDOW = 200  # characters after a difference compared character by character to find where it ends
ANCHOR_CHARS = 32  # characters of `after` looked for in `before` where a deletion is longer than the window


def changes(before: str, after: str) -> list[dict]:
    """What normalization changed (`before` into `after`): each stretch replaced, as `at` (its offset in
    `before`), `before`, `after` (cut at CHANGE_CHARS), and `left` and `right`, the text around it; the first
    MAX_CHANGES. The texts are walked together: what is equal skipped by slices, each difference measured in
    a window of WINDOW characters (a diff of the whole texts costs their square where changed and equal lines
    alternate: 12 s for 1 MB); one that fills the window is what normalization makes long, a deletion (a run
    of control characters, blank lines), and ends where the text that follows it in `after` stands."""
    found, i, j = [], 0, 0  # (at, end in before, what stands there in after)
    while len(found) < MAX_CHANGES:
        i, j = _first_difference(before, after, i, j)
        if i >= len(before) and j >= len(after):
            break
        a, b = before[i:i + WINDOW], after[j:j + WINDOW]
        _, k1, k2, m1, m2 = next(op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
                                 if op[0] != "equal")
        if k2 == len(a) == WINDOW and (resumes := before.find(after[j:j + ANCHOR_CHARS], i)) > i:
            k1, k2, m1, m2 = 0, resumes - i, 0, 0  # a deletion longer than the window
        found.append((i + k1, i + k2, b[m1:m2]))
        i, j = i + k2, j + m2
    return [{"at": at, "before": before[at:end][:CHANGE_CHARS], "after": became[:CHANGE_CHARS],
             "left": before[max(0, at - CONTEXT_CHARS):at], "right": before[end:end + CONTEXT_CHARS]}
            for at, end, became in found]


def _first_difference(before: str, after: str, i: int, j: int, step: int = 4096) -> tuple[int, int]:
    """The first positions from (i, j) where the texts differ (their ends where one runs out)."""
    while i < len(before) and j < len(after):
        k = min(step, len(before) - i, len(after) - j)
        if before[i:i + k] != after[j:j + k]:
            if k == 1:
                break
            step = k // 2  # the difference is in this slice: halve it
            continue
        i, j, step = i + k, j + k, min(4096, 2 * step)
    return i, j


def normalize(text: str, cfg: NormalizeConfig) -> str:
    # ftfy is the slowest step: it runs only where its own detector sees mojibake (never in ASCII).
    if cfg.fix_mojibake and not text.isascii() and mojibake.is_bad(text):
        # Width and quote fixes are off: they would rewrite Chinese full-width punctuation and quotes.
        text = ftfy.fix_text(text, normalization="NFC" if cfg.nfc else None, uncurl_quotes=False,
                             fix_character_width=False, fix_line_breaks=True)
    elif cfg.nfc and not text.isascii():
        text = unicodedata.normalize("NFC", text)
    if cfg.tidy_whitespace:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if cfg.remove_control_chars and CONTROL.search(text):  # an escape starts with one too
        text = CONTROL.sub("", TERMINAL_ESCAPE.sub("", text))
    if cfg.remove_invisible and not text.isascii() and INVISIBLE.search(text):
        text = INVISIBLE.sub("", text)
    if cfg.tidy_whitespace:
        if not text.isascii():
            text = EXOTIC_SPACE.sub(" ", text)
        text += "\n"
        if " \n" in text or "\t\n" in text:  # the substitutions scan every character: only where they apply
            text = TRAILING_SPACE.sub("\n", text)
        if "\n\n\n" in text:
            text = BLANK_LINES.sub("\n\n", text)
        text = text.strip()
    return text
