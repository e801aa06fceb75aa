"""FineWeb's own quality rules (Penedo et al. 2024), with their published thresholds."""

from dataclasses import dataclass

from prep.config import check_ranges
from prep.quality.reflow import reflowed
from prep.quality.text_units import TERMINAL_PUNCTUATION, has_words, lines, word_stats


@dataclass
class FineWebConfig:
    enabled: bool = True  # apply this rule (false: it keeps every document)
    line_punct_thr: float = 0.12  # at least this share of lines must end in terminal punctuation
    short_line_length: int = 30  # a line this long or shorter is "short"
    short_line_thr: float = 0.67  # at most this share of short lines (menus, lists of links)
    char_duplicates_ratio: float = 0.01  # at most this share of characters in repeated lines
    new_line_ratio: float = 0.3  # at most this many line breaks per word (one word per line)
    # read hard-wrapped text by its paragraphs and items, not its lines (prep/quality/reflow.py)
    reflow: bool = False
    # a line of no letter or digit (a table's border, a rule) is not counted as a repeated line
    skip_layout_lines: bool = False

    def __post_init__(self):
        check_ranges(self, ("line_punct_thr", "short_line_thr", "char_duplicates_ratio"), short_line_length=0,
                     new_line_ratio=0)


def fineweb(text: str, cfg: FineWebConfig, char_based: bool) -> str | None:
    view = reflowed(text) if cfg.reflow else text
    doc_lines = [line.strip() for line in lines(view)]
    if not doc_lines:
        return "empty"
    if sum(line.endswith(TERMINAL_PUNCTUATION) for line in doc_lines) / len(doc_lines) < cfg.line_punct_thr:
        return "line_punct_ratio"
    if sum(len(line) <= cfg.short_line_length for line in doc_lines) / len(doc_lines) > cfg.short_line_thr:
        return "short_line_ratio"
    seen, dup_chars = set(), 0
    for line in filter(has_words, doc_lines) if cfg.skip_layout_lines else doc_lines:
        if line in seen:
            dup_chars += len(line)
        seen.add(line)
    if dup_chars / max(1, len(view.replace("\n", ""))) > cfg.char_duplicates_ratio:
        return "char_dup_ratio"
    n_words = word_stats(text, char_based).count
    if view.count("\n") / max(1, n_words) > cfg.new_line_ratio:
        return "list_ratio"
    return None
