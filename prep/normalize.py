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


CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff\ufffe]")
TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
EXOTIC_SPACE = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f]")
TRAILING_SPACE = re.compile(r"[ \t]+\n")
BLANK_LINES = re.compile(r"\n{3,}")


MAX_CHANGES = 5  # changes of a text recorded, the first ones
CHANGE_CHARS = 200  # characters of a change's before and after recorded
CONTEXT_CHARS = 40  # characters of the text on either side of a change
CHAR_DIFF_CHARS = 2_000  # lines replaced together are compared character by character up to this size


def changes(before: str, after: str) -> list[dict]:
    """What normalization changed (`before` into `after`): each stretch replaced, as `at` (its offset in
    `before`), `before`, `after` (cut at CHANGE_CHARS), and `left` and `right`, the text around it; the first
    MAX_CHANGES. Lines first, then characters inside the lines replaced together, so that the cost stays near
    the text's length (a character diff of a whole text costs its square)."""
    if before == after:
        return []
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    offsets = [0]
    for line in old:
        offsets.append(offsets[-1] + len(line))
    found = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        a, b, start = "".join(old[i1:i2]), "".join(new[j1:j2]), offsets[i1]
        if max(len(a), len(b)) > CHAR_DIFF_CHARS:
            found.append((start, a, b))
        else:
            found += [(start + k1, a[k1:k2], b[m1:m2]) for op, k1, k2, m1, m2 in
                      difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op != "equal"]
        if len(found) >= MAX_CHANGES:
            break
    return [{"at": at, "before": a[:CHANGE_CHARS], "after": b[:CHANGE_CHARS],
             "left": before[max(0, at - CONTEXT_CHARS):at], "right": before[at + len(a):at + len(a) + CONTEXT_CHARS]}
            for at, a, b in found[:MAX_CHANGES]]


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
