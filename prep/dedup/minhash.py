"""MinHash signatures computed over whole batches of documents with NumPy.

The scheme is datasketch 2.x's "affine32", pinned explicitly (datasketch 2.0 changed its default, and
signatures of different schemes cannot be compared): each shingle's 32-bit hash is pre-mixed with the
MurmurHash3 finalizer, then permutation k maps it to a_k * h + b_k mod 2^32, with (a, b) drawn by
datasketch from `numpy.random.RandomState(seed)`. The shingle hash is `shingle_hash32` below; a
signature here equals `datasketch.MinHash(num_perm, seed, hashfunc=shingle_hash32,
scheme="affine32")` updated with the same shingles (tests/prep/test_minhash.py checks it).

What makes it fast: no Python code runs per shingle. A batch's normalized text is split into units
and CRC-32'd in one C-level pass; shingle hashes are a rolling polynomial over unit hashes; the
permutations and minima are array operations.
"""

import zlib
from dataclasses import dataclass

import numpy as np

from prep.dedup.shingles import normalize_bytes, normalize_for_dedup

UNIT_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd: the polynomial over unit hashes loses no bits


@dataclass(frozen=True)
class MinHashConfig:
    num_perm: int = 128  # signature length; LSH bands x rows come from it and the threshold
    ngram: int = 5  # units per shingle (words, or CJK characters)
    seed: int = 1  # datasketch's default seed

    def __post_init__(self):
        if self.num_perm < 2 or self.ngram < 1:
            raise ValueError(f"num_perm must be at least 2 and ngram at least 1, got {self.num_perm}, {self.ngram}")


def _fold32(h: np.ndarray) -> np.ndarray:
    return ((h >> np.uint64(32)) ^ h).astype(np.uint32)


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's finalizer, as datasketch applies it before its affine32 permutations."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def permutations(cfg: MinHashConfig) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) exactly as datasketch 2.x draws them for the affine32 scheme."""
    gen = np.random.RandomState(cfg.seed)
    a = gen.randint(0, 1 << 31, cfg.num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, cfg.num_perm, dtype=np.uint32)
    return a, b


# --- the scalar definition, for datasketch and for reading -------------------------------------

def shingle_hash32(shingle: bytes) -> int:
    """The 32-bit hash of a shingle given as its units joined by single spaces (UTF-8): a polynomial
    over the units' CRC-32s, modulo 2^64, folded to 32 bits."""
    h = 0
    for unit in shingle.split(b" "):
        h = (h * int(UNIT_BASE) + zlib.crc32(unit)) % (1 << 64)
    return int(_fold32(np.array([h], dtype=np.uint64))[0])


# --- the vectorized computation -----------------------------------------------------------------

def _shingle_hashes(unit_h: np.ndarray, doc_of_unit: np.ndarray, n_docs: int, n: int):
    """(shingle hashes, document of each shingle); n-grams never cross documents."""
    counts = np.bincount(doc_of_unit, minlength=n_docs)
    out_h, out_doc = [], []
    if len(unit_h) >= n:
        h = np.zeros(len(unit_h) - n + 1, np.uint64)
        with np.errstate(over="ignore"):
            for k in range(n):
                h = h * UNIT_BASE + unit_h[k : len(unit_h) - n + 1 + k]
        same_doc = doc_of_unit[: len(h)] == doc_of_unit[n - 1 :]
        out_h.append(h[same_doc])
        out_doc.append(doc_of_unit[: len(h)][same_doc])
    # Documents shorter than n: one shingle of all their units (an empty one for empty text).
    offsets = np.concatenate(([0], np.cumsum(counts)))
    for doc in np.nonzero(counts < n)[0]:
        h = np.uint64(0)
        with np.errstate(over="ignore"):
            for value in unit_h[offsets[doc] : offsets[doc + 1]]:
                h = h * UNIT_BASE + value
        out_h.append(np.array([h], np.uint64))
        out_doc.append(np.array([doc]))
    hashes, docs = np.concatenate(out_h), np.concatenate(out_doc)
    order = np.argsort(docs, kind="stable")
    return hashes[order], docs[order]


def signatures(texts: list[str], cfg: MinHashConfig, chunk: int = 2048) -> np.ndarray:
    """uint32 [len(texts), num_perm]: one MinHash signature per text."""
    return signatures_of_normalized([normalize_bytes(t) for t in texts], cfg, chunk)


def signatures_of_normalized(normalized: list[bytes], cfg: MinHashConfig, chunk: int = 2048) -> np.ndarray:
    """The same, for texts already through `prep.dedup.shingles.normalize_bytes`."""
    units_per_doc = np.array([x.count(b" ") + 1 if x else 0 for x in normalized], dtype=np.int64)
    # One C-level pass: split the whole batch into units and CRC each (no Python code per unit).
    unit_h = np.fromiter(map(zlib.crc32, b" ".join(normalized).split()), np.uint64, int(units_per_doc.sum()))
    doc_of_unit = np.repeat(np.arange(len(normalized)), units_per_doc)
    shingle_h, shingle_doc = _shingle_hashes(unit_h, doc_of_unit, len(normalized), cfg.ngram)
    mixed = _fmix32(_fold32(shingle_h))
    a, b = (x[:, None] for x in permutations(cfg))
    result = np.full((len(normalized), cfg.num_perm), np.iinfo(np.uint32).max, np.uint32)
    counts = np.bincount(shingle_doc, minlength=len(normalized))
    offsets = np.concatenate(([0], np.cumsum(counts)))
    # Long documents: a plain minimum over [num_perm, shingles] blocks (vectorized well by NumPy).
    for doc in np.nonzero(counts >= chunk // 8)[0]:
        for lo in range(offsets[doc], offsets[doc + 1], chunk):
            block = a * mixed[None, lo : min(lo + chunk, offsets[doc + 1])] + b
            np.minimum(result[doc], block.min(axis=1), out=result[doc])
    # Short documents: many per block, reduced segment by segment.
    short = counts[shingle_doc] < chunk // 8
    h_short, doc_short = mixed[short], shingle_doc[short]
    for lo in range(0, len(h_short), chunk):
        h, docs = h_short[lo : lo + chunk], doc_short[lo : lo + chunk]
        bounds = np.nonzero(np.concatenate(([True], docs[1:] != docs[:-1])))[0]
        # A document can straddle two blocks: fold its minima into what the earlier block found.
        np.minimum.at(result, docs[bounds], np.minimum.reduceat(a * h[None, :] + b, bounds, axis=1).T)
    return result


def shingle_count(texts: list[str], cfg: MinHashConfig) -> int:
    """How many shingles `signatures` hashes for these texts (for throughput figures)."""
    total = 0
    for t in texts:
        k = len(normalize_for_dedup(t).split())
        total += max(1, k - cfg.ngram + 1)
    return total
