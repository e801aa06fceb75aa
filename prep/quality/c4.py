"""C4's rules (Raffel et al. 2020): line rules that remove lines, then document rules.

Defaults follow datatrove's C4QualityFilter as FineWeb ran it, with two documented departures:
`filter_no_terminal_punct` is off (as in FineWeb: it strips headings, list items and code), and
`filter_curly_bracket` is off (C4 used it to drop every page with code; code inside documentation is
exactly what a pretraining corpus wants).
"""

import re
from dataclasses import dataclass, field
from itertools import compress

import numpy as np

from prep.config import check_ranges
from prep.quality.text_units import TERMINAL_PUNCTUATION, count_sentences, line_words

CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]")
POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")


@dataclass
class C4Config:
    enabled: bool = True  # apply this rule (false: it keeps every document)
    remove_citations: bool = True  # drop Wikipedia-style [1], [edit], [citation needed]
    filter_no_terminal_punct: bool = False  # drop lines that do not end like a sentence
    min_words_per_line: int = 3  # drop lines with fewer words (menus, buttons); 0 disables
    max_word_length: int = 1000  # drop lines with a longer word (minified code, base64)
    filter_javascript: bool = True  # drop lines that mention javascript ("enable JavaScript")
    filter_policy: bool = True  # drop lines with cookie and privacy boilerplate
    policy_phrases: list[str] = field(default_factory=lambda: list(POLICY_PHRASES))  # what filter_policy looks for
    filter_lorem_ipsum: bool = True  # drop documents with placeholder text
    filter_curly_bracket: bool = False  # drop documents containing '{'
    min_num_sentences: int = 5  # drop documents with fewer sentences left; 0 disables

    def __post_init__(self):
        check_ranges(self, min_words_per_line=0, max_word_length=1, min_num_sentences=0)
        if any(not phrase.strip() for phrase in self.policy_phrases):  # "" is in every line: every line dropped
            raise ValueError("policy_phrases: an empty phrase is in every line")


def _keep_line(line: str, cfg: C4Config, phrases: bool) -> bool:
    """The checks of a line with enough words, none too long (line_words counted those).
    `phrases`: whether the document has "javascript" or a policy phrase anywhere (else no line has)."""
    stripped = line.strip()
    if cfg.filter_no_terminal_punct and (not stripped.endswith(TERMINAL_PUNCTUATION) or stripped.endswith("...")):
        return False
    if not phrases:
        return True
    lower = stripped.lower()
    if cfg.filter_javascript and "javascript" in lower:
        return False
    if cfg.filter_policy and any(p in lower for p in cfg.policy_phrases):
        return False
    return True


def c4(text: str, cfg: C4Config, char_based: bool) -> tuple[str, str | None]:
    """(text with the failing lines removed, the failed document check or None)."""
    lower = text.lower()
    if cfg.filter_lorem_ipsum and "lorem ipsum" in lower:
        return text, "lorem_ipsum"
    if cfg.filter_curly_bracket and "{" in text:
        return text, "curly_bracket"
    if cfg.remove_citations:
        text = CITATION.sub("", text)
    lower = text.lower()  # after the citations: "java[1]script" is a line about javascript
    phrases = ((cfg.filter_javascript and "javascript" in lower)
               or (cfg.filter_policy and any(p in lower for p in cfg.policy_phrases)))
    pieces = text.split("\n")
    counts, longest = line_words(text, char_based)
    # Blank lines keep paragraphs apart; a line of too few words (menus, buttons) or with a word
    # too long (minified code, base64) goes; the rest have their line checks.
    keep = (counts == 0) | ((counts >= cfg.min_words_per_line) & (longest <= cfg.max_word_length))
    if cfg.filter_no_terminal_punct or phrases:
        for i in np.flatnonzero(keep & (counts > 0)).tolist():
            keep[i] = _keep_line(pieces[i], cfg, phrases)
    kept = "\n".join(compress(pieces, keep.tolist()))
    kept = re.sub(r"\n{3,}", "\n\n", kept).strip()
    if cfg.min_num_sentences and count_sentences(kept, cfg.min_num_sentences) < cfg.min_num_sentences:
        return kept, "min_num_sentences"
    return kept, None
