"""Gopher quality rules (Rae et al. 2021, appendix A), with their published thresholds."""

import itertools
import re
from dataclasses import dataclass

from prep.config import check_ranges
from prep.quality.text_units import first_words, lines, word_stats, words

ENGLISH_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")


@dataclass
class GopherQualityConfig:
    enabled: bool = True  # apply this rule (false: it keeps every document)
    min_doc_words: int = 50  # fewer words: too short to be a document
    max_doc_words: int = 100_000  # more: a dump, not a document
    min_avg_word_length: float = 3  # shorter on average: gibberish or symbol lists
    max_avg_word_length: float = 10  # longer: URLs, hashes, base64
    max_symbol_word_ratio: float = 0.1  # '#' and ellipses per word
    max_bullet_lines_ratio: float = 0.9  # lines that start with a bullet
    max_ellipsis_lines_ratio: float = 0.3  # lines that end with an ellipsis (truncated snippets)
    max_non_alpha_words_ratio: float = 0.8  # at least 80% of words must contain a letter
    min_stop_words: int = 2  # at least this many stop words: real sentences in the language
    stop_words: tuple[str, ...] = ENGLISH_STOP_WORDS  # empty disables the check
    # list markers and section numbers opening a line ("•", "□", "2.2.1", "(3)") are not counted as words
    # without a letter: a manual's table of contents is made of them
    skip_line_markers: bool = False

    def __post_init__(self):
        check_ranges(self, ("max_bullet_lines_ratio", "max_ellipsis_lines_ratio", "max_non_alpha_words_ratio"),
                     min_doc_words=0, max_doc_words=max(self.min_doc_words, 0), min_avg_word_length=0,
                     max_avg_word_length=max(self.min_avg_word_length, 0), max_symbol_word_ratio=0, min_stop_words=0)
        # words are compared lowercased: "The" in the list had matched none, and every document was rejected
        self.stop_words = tuple(word.strip().lower() for word in self.stop_words)


STOP_WORD_WINDOW = 100
BULLETS = ("•", "‣", "◦", "▪", "-", "*")
# the markers opening a line, one after another ("☆ 2.2.1 简单记谱法"): bullets (with those a text browser
# draws nested lists with), numbers with a dot ("1.", "2.2.1"; a bare "4" opens a protocol table's rows)
# and "(3)", "3)"
LINE_MARKERS = re.compile(r"^[^\S\n]*((?:(?:[•‣◦▪□■☆○●*+–-]|\d{1,3}(?:\.\d{1,3})*\.|\d{1,3}(?:\.\d{1,3})+|"
                          r"\(?\d{1,3}\))[^\S\n]+)+)", re.MULTILINE)
ELLIPSES = ("...", "…")


def gopher_quality(text: str, cfg: GopherQualityConfig, char_based: bool) -> str | None:
    """The first failed check's name, or None when the document passes."""
    stats = word_stats(text, char_based)
    n = stats.count
    if n < cfg.min_doc_words:
        return "min_doc_words"
    if n > cfg.max_doc_words:
        return "max_doc_words"
    avg = stats.chars / n
    if avg < cfg.min_avg_word_length:
        return "min_avg_word_length"
    if avg > cfg.max_avg_word_length:
        return "max_avg_word_length"
    symbols = text.count("#") + text.count("...") + text.count("…")
    if symbols / n > cfg.max_symbol_word_ratio:
        return "max_symbol_word_ratio"
    doc_lines = lines(text)
    if doc_lines:
        if sum(line.lstrip().startswith(BULLETS) for line in doc_lines) / len(doc_lines) > cfg.max_bullet_lines_ratio:
            return "max_bullet_lines_ratio"
        if sum(line.rstrip().endswith(ELLIPSES) for line in doc_lines) / len(doc_lines) > cfg.max_ellipsis_lines_ratio:
            return "max_ellipsis_lines_ratio"
    if stats.with_letters / n < cfg.max_non_alpha_words_ratio:
        markers = _line_markers(text) if cfg.skip_line_markers else 0
        if stats.with_letters / max(1, n - markers) < cfg.max_non_alpha_words_ratio:
            return "max_non_alpha_words_ratio"
    if cfg.stop_words and cfg.min_stop_words > 0 and not _has_stop_words(text, char_based, cfg, n):
        return "min_stop_words"
    return None


def _line_markers(text: str) -> int:
    """The words of LINE_MARKERS in a text: none has a letter."""
    return sum(len(found.group(1).split()) for found in LINE_MARKERS.finditer(text))


def _has_stop_words(text: str, char_based: bool, cfg: GopherQualityConfig, n: int) -> bool:
    """Whether min_stop_words of the n words are stop words; prose has them early, so the first
    words are looked at before all of them."""
    stop = set(cfg.stop_words)

    def enough(doc_words: list[str]) -> bool:
        found = (True for w in doc_words if w.lower() in stop)
        return sum(1 for _ in itertools.islice(found, cfg.min_stop_words)) >= cfg.min_stop_words  # then stop looking

    return (enough(first_words(text, char_based, STOP_WORD_WINDOW))
            or (n > STOP_WORD_WINDOW and enough(words(text, char_based))))
