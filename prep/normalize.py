"""Text normalization: Unicode NFC, mojibake repair, control characters, whitespace."""

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
