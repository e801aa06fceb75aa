"""Gopher repetition rules (Rae et al. 2021, table A1), with their published thresholds."""

from dataclasses import dataclass, field

import numpy as np

from prep.compiled import kernel
from prep.config import check_ranges
from prep.quality.text_units import has_words, lines, paragraphs, word_stats


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
    # lines and paragraphs of no letter or digit (a table's borders, rules) are not counted as repeats or items
    skip_layout_lines: bool = False

    def __post_init__(self):
        check_ranges(self, ("dup_line_frac", "dup_para_frac", "dup_line_char_frac", "dup_para_char_frac"))
        if not all(0 <= share <= 1 for _, share in self.top_n_grams + self.dup_n_grams):
            raise ValueError(f"n-gram shares must be in [0, 1], got top_n_grams {self.top_n_grams}, dup_n_grams "
                             f"{self.dup_n_grams}")
        if any(int(n) != n or n < 1 for n, _ in self.top_n_grams + self.dup_n_grams):
            raise ValueError(f"n-gram sizes must be whole numbers of at least 1, got top_n_grams {self.top_n_grams}, "
                             f"dup_n_grams {self.dup_n_grams}")


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


@kernel
def _table_bits(items: int) -> int:
    """log2 of an open-addressing table's size that stays at most half full."""
    bits = 4
    while (1 << bits) < 2 * items:
        bits += 1
    return bits


@kernel
def _first_seen_ids(word_hashes: np.ndarray) -> np.ndarray:
    """Each word's id (from its uint64 hash): the number of distinct words before its first occurrence
    (as a dict would give)."""
    bits = _table_bits(len(word_hashes))
    size = 1 << bits
    keys, values = np.zeros(size, np.uint64), np.full(size, -1, np.int64)
    ids, distinct = np.empty(len(word_hashes), np.uint64), 0
    for i in range(len(word_hashes)):
        slot = (word_hashes[i] * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)
        while values[slot] >= 0 and keys[slot] != word_hashes[i]:
            slot = (slot + np.uint64(1)) & np.uint64(size - 1)
        if values[slot] < 0:
            keys[slot], values[slot] = word_hashes[i], distinct
            distinct += 1
        ids[i] = values[slot]
    return ids


@kernel
def _ngram_shares(ids: np.ndarray, lengths: np.ndarray, ns: np.ndarray, total_chars: int):
    """For each n of ns (ascending): (characters of the most frequent n-gram times its count,
    characters of words inside any repeat of an earlier n-gram, each counted once), both over
    total_chars. N-grams are told apart by a 64-bit polynomial hash of their word ids (wrapping
    arithmetic intended), extended by one word from one n to the next; among n-grams equally frequent
    the one with the smallest hash counts (the order numpy's unique gave the first version)."""
    tops, dups = np.zeros(len(ns)), np.zeros(len(ns))
    m_most = len(ids) - ns[0] + 1
    if m_most <= 0:
        return tops, dups
    bits = _table_bits(m_most)  # one table for every n, sized for the smallest
    size = 1 << bits
    keys, counts, firsts = np.zeros(size, np.uint64), np.zeros(size, np.int64), np.zeros(size, np.int64)
    cover = np.zeros(len(ids) + 1, np.int64)  # +1 at each repeat's start, -1 after its end
    hashes, extended = ids.copy(), 1  # hashes[i]: the n-gram at i, for n = extended
    for t in range(len(ns)):
        n = ns[t]
        m = len(ids) - n + 1
        if m <= 0:
            break  # longer n-grams: none either
        while extended < n:
            for i in range(len(ids) - extended):
                hashes[i] = hashes[i] * np.uint64(1_000_003) + ids[i + extended]
            extended += 1
        counts[:] = 0
        cover[:] = 0
        any_repeat, best = False, -1
        for i in range(m):
            h = hashes[i]
            slot = (h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)
            while counts[slot] > 0 and keys[slot] != h:
                slot = (slot + np.uint64(1)) & np.uint64(size - 1)
            if counts[slot] == 0:
                keys[slot], firsts[slot] = h, i
            else:
                cover[i] += 1
                cover[i + n] -= 1
                any_repeat = True
            counts[slot] += 1
            # The most frequent so far, the smaller hash among equals: what a scan at the end would pick.
            if best < 0 or counts[slot] > counts[best] or (counts[slot] == counts[best] and keys[slot] < keys[best]):
                best = np.int64(slot)
        if counts[best] >= 2:
            chars = 0
            for k in range(firsts[best], firsts[best] + n):
                chars += lengths[k]
            tops[t] = float(chars) * counts[best] / total_chars
        if any_repeat:
            depth, chars = 0, 0
            for k in range(len(ids)):
                depth += cover[k]
                if depth > 0:
                    chars += lengths[k]
            dups[t] = float(chars) / total_chars
    return tops, dups


def gopher_repetition(text: str, cfg: GopherRepetitionConfig, char_based: bool) -> str | None:
    total = len(text)
    if total == 0:
        return None
    paras = paragraphs(text)
    doc_lines = lines(text)
    if cfg.skip_layout_lines:
        paras, doc_lines = list(filter(has_words, paras)), list(filter(has_words, doc_lines))
    count, chars = _duplicates(paras)
    if paras and count / len(paras) > cfg.dup_para_frac:
        return "dup_para_frac"
    if chars / total > cfg.dup_para_char_frac:
        return "dup_para_char_frac"
    count, chars = _duplicates(doc_lines)
    if doc_lines and count / len(doc_lines) > cfg.dup_line_frac:
        return "dup_line_frac"
    if chars / total > cfg.dup_line_char_frac:
        return "dup_line_char_frac"
    stats = word_stats(text, char_based)
    # Words told apart by a 64-bit hash of their code points: two words of one document that collide
    # are as likely as two random 64-bit numbers being equal.
    ns = sorted({n for n, _ in cfg.top_n_grams + cfg.dup_n_grams})
    shares = {}
    if ns:
        top, dup = _ngram_shares(_first_seen_ids(stats.hashes), stats.lengths, np.array(ns, np.int64), stats.chars or 1)
        shares = {n: (top[i], dup[i]) for i, n in enumerate(ns)}
    for n, limit in cfg.top_n_grams:
        if shares[n][0] > limit:
            return f"top_{n}_gram"
    for n, limit in cfg.dup_n_grams:
        if shares[n][1] > limit:
            return f"dup_{n}_gram"
    return None
