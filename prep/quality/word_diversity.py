"""Keyword stuffing: a long text made of a handful of words repeated in shuffled order.

Not one of the published rules (Gopher's n-gram rules miss it once the words are shuffled, and a
stop-word check is only possible where a list exists); tokenmill's own addition, switchable.
"""

from dataclasses import dataclass
from itertools import repeat

from prep.config import check_ranges
from prep.quality.text_units import first_words


@dataclass
class WordDiversityConfig:
    enabled: bool = True  # apply this rule (false: it keeps every document)
    window_words: int = 1000  # measured over the first words: long texts repeat words naturally
    min_words: int = 50  # shorter texts are left to the length rules
    min_distinct_ratio: float = 0.1  # prose is at 0.3-0.6 here; stuffing at 0.01-0.08

    def __post_init__(self):
        check_ranges(self, ("min_distinct_ratio",), min_words=0)
        if self.window_words < 1:
            raise ValueError(f"window_words must be at least 1, got {self.window_words}")


PUNCTUATION = ".,;:!?\"'()"  # stripped from a word's ends before comparing


def word_diversity(text: str, cfg: WordDiversityConfig, char_based: bool) -> str | None:
    window = first_words(text, char_based, cfg.window_words)
    if not window or len(window) < cfg.min_words:  # min_words 0 still has no words to divide by
        return None
    # Lowered all at once: no word holds a space and lowering makes none, so the split gives the
    # lowered words back (the final-sigma rule sees a space or an end at a word's ends either way).
    lowered = " ".join(window).lower().split(" ")
    if len(set(map(str.strip, lowered, repeat(PUNCTUATION)))) / len(window) < cfg.min_distinct_ratio:
        return "min_distinct_ratio"
    return None
