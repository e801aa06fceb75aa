"""Gopher repetition rules (Rae et al. 2021, table A1), with their published thresholds."""

from dataclasses import dataclass, field

import numpy as np

from prep.quality.text_units import lines, paragraphs, words


@dataclass
class GopherRepetitionConfig:
    enabled: bool = True  # apply this rule (false: it keeps every document)
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


def _ngram_hashes(ids: np.ndarray, n: int) -> np.ndarray:
    """A 64-bit polynomial hash of each n-gram of word ids (wrapping arithmetic is intended)."""
    hashes = np.zeros(len(ids) - n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            hashes = hashes * np.uint64(1_000_003) + ids[k : len(ids) - n + 1 + k]
    return hashes


def _top_ngram_share(ids: np.ndarray, lengths: np.ndarray, n: int, total_chars: int) -> float:
    if len(ids) < n:
        return 0.0
    _, first, counts = np.unique(_ngram_hashes(ids, n), return_index=True, return_counts=True)
    best = int(np.argmax(counts))
    if counts[best] < 2:
        return 0.0
    start = first[best]
    return float(lengths[start : start + n].sum()) * int(counts[best]) / total_chars


def _dup_ngram_share(ids: np.ndarray, lengths: np.ndarray, n: int, total_chars: int) -> float:
    """Characters of words inside any repeat of an earlier n-gram, each word counted once."""
    if len(ids) < n:
        return 0.0
    hashes = _ngram_hashes(ids, n)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    repeats = np.nonzero(first[inverse] < np.arange(len(hashes)))[0]
    if not len(repeats):
        return 0.0
    cover = np.zeros(len(ids) + 1, dtype=np.int32)  # +1 at each repeat's start, -1 after its end
    np.add.at(cover, repeats, 1)
    np.add.at(cover, repeats + n, -1)
    covered = np.cumsum(cover[:-1]) > 0
    return float(lengths[covered].sum()) / total_chars


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
    vocabulary: dict[str, int] = {}
    ids = np.fromiter((vocabulary.setdefault(w, len(vocabulary)) for w in doc_words), np.uint64, len(doc_words))
    lengths = np.fromiter(map(len, doc_words), np.int64, len(doc_words))
    word_chars = int(lengths.sum()) or 1
    for n, limit in cfg.top_n_grams:
        if _top_ngram_share(ids, lengths, n, word_chars) > limit:
            return f"top_{n}_gram"
    for n, limit in cfg.dup_n_grams:
        if _dup_ngram_share(ids, lengths, n, word_chars) > limit:
            return f"dup_{n}_gram"
    return None
