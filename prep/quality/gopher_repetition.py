"""Gopher repetition rules (Rae et al. 2021, table A1), with their published thresholds."""

from collections import Counter
from dataclasses import dataclass, field

from prep.quality.text_units import lines, paragraphs, words


@dataclass
class GopherRepetitionConfig:
    enabled: bool = True
    dup_line_frac: float = 0.3  # share of lines that repeat an earlier line
    dup_para_frac: float = 0.3  # share of paragraphs that repeat an earlier paragraph
    dup_line_char_frac: float = 0.2  # share of characters in repeated lines
    dup_para_char_frac: float = 0.2  # share of characters in repeated paragraphs
    # (n, max share of characters covered by the most frequent n-gram)
    top_n_grams: list[tuple[int, float]] = field(default_factory=lambda: [(2, 0.2), (3, 0.18), (4, 0.16)])
    # (n, max share of characters inside n-grams that occur more than once)
    dup_n_grams: list[tuple[int, float]] = field(
        default_factory=lambda: [(5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)]
    )


def _duplicates(items: list[str]) -> tuple[int, int]:
    """(count, characters) of the items that repeat an earlier one."""
    seen, count, chars = set(), 0, 0
    for item in items:
        if item in seen:
            count += 1
            chars += len(item)
        else:
            seen.add(item)
    return count, chars


def _top_ngram_share(doc_words: list[str], n: int, total_chars: int) -> float:
    grams = Counter(tuple(doc_words[i : i + n]) for i in range(len(doc_words) - n + 1))
    if not grams:
        return 0.0
    gram, count = grams.most_common(1)[0]
    return sum(len(w) for w in gram) * count / total_chars if count > 1 else 0.0


def _dup_ngram_share(doc_words: list[str], n: int, total_chars: int) -> float:
    """Characters of words inside any repeated n-gram, each word counted once."""
    first_seen: dict[tuple[str, ...], int] = {}
    covered = [False] * len(doc_words)
    for i in range(len(doc_words) - n + 1):
        gram = tuple(doc_words[i : i + n])
        if gram in first_seen:
            for j in range(i, i + n):
                covered[j] = True
        else:
            first_seen[gram] = i
    return sum(len(w) for w, c in zip(doc_words, covered) if c) / total_chars


def gopher_repetition(text: str, cfg: GopherRepetitionConfig, char_based: bool) -> str | None:
    total = len(text)
    if total == 0:
        return None
    paras = paragraphs(text)
    count, chars = _duplicates(paras)
    if paras and count / len(paras) > cfg.dup_para_frac:
        return "dup_para_frac"
    if chars / total > cfg.dup_para_char_frac:
        return "dup_para_char_frac"
    doc_lines = lines(text)
    count, chars = _duplicates(doc_lines)
    if doc_lines and count / len(doc_lines) > cfg.dup_line_frac:
        return "dup_line_frac"
    if chars / total > cfg.dup_line_char_frac:
        return "dup_line_char_frac"
    doc_words = words(text, char_based)
    word_chars = sum(len(w) for w in doc_words) or 1
    for n, limit in cfg.top_n_grams:
        if _top_ngram_share(doc_words, n, word_chars) > limit:
            return f"top_{n}_gram"
    for n, limit in cfg.dup_n_grams:
        if _dup_ngram_share(doc_words, n, word_chars) > limit:
            return f"dup_{n}_gram"
    return None
