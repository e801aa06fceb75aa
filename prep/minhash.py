"""MinHash signatures computed over whole batches of documents with NumPy.

The scheme is datasketch 2.x's "affine32", pinned explicitly (datasketch 2.0 changed its default, and
signatures of different schemes cannot be compared): each shingle's 32-bit hash is pre-mixed with the
MurmurHash3 finalizer, then permutation k maps it to a_k * h + b_k mod 2^32, with (a, b) drawn by
datasketch from `numpy.random.RandomState(seed)`. The shingle hash is `shingle_hash32` below; a
signature here equals `datasketch.MinHash(num_perm, seed, hashfunc=shingle_hash32,
scheme="affine32")` updated with the same shingles (tests/prep/test_minhash.py checks it).

What makes it fast: no Python call per shingle. The normalized text of a batch is one byte array;
units are runs of non-space bytes; unit hashes come from prefix sums of a polynomial hash; shingle
hashes from a rolling combination of unit hashes; permutations and minima are array operations.
"""

from dataclasses import dataclass

import numpy as np

from prep.shingles import normalize_for_dedup

SCHEME = "affine32"
BYTE_BASE = np.uint64(0x100000001B3)  # FNV prime: odd, so invertible modulo 2^64
UNIT_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd as well
SPACE = 32


@dataclass(frozen=True)
class MinHashConfig:
    num_perm: int = 128  # signature length; LSH bands x rows come from it and the threshold
    ngram: int = 5  # units per shingle (words, or CJK characters)
    seed: int = 1  # datasketch's default seed


def _inverse_mod_2_64(x: int) -> int:
    return pow(x, -1, 1 << 64)


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

def unit_hash(unit: bytes) -> int:
    h = 0
    for k, byte in enumerate(unit):
        h = (h + (byte + 1) * pow(int(BYTE_BASE), k, 1 << 64)) % (1 << 64)
    return h


def shingle_hash32(shingle: bytes) -> int:
    """The 32-bit hash of a shingle given as its units joined by single spaces (UTF-8)."""
    h = 0
    for unit in shingle.split(b" "):
        h = (h * int(UNIT_BASE) + unit_hash(unit)) % (1 << 64)
    return int(_fold32(np.array([h], dtype=np.uint64))[0])


# --- the vectorized computation -----------------------------------------------------------------

def _unit_hashes(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hash of each unit, index of its first byte) for a byte array of space-separated units.

    unit_hash(u) = sum over its bytes of (byte + 1) * BYTE_BASE^(position in the unit), mod 2^64.
    """
    is_unit = data != SPACE
    edges = np.diff(np.concatenate(([False], is_unit, [False])).astype(np.int8))
    starts = np.nonzero(edges == 1)[0]
    if not len(starts):
        return np.zeros(0, np.uint64), starts
    unit_of_byte = np.cumsum(edges[:-1] == 1) - 1  # the unit each byte belongs to (or follows)
    position = np.arange(len(data)) - starts[np.maximum(unit_of_byte, 0)]
    with np.errstate(over="ignore"):
        power_table = np.cumprod(np.concatenate((np.ones(1, np.uint64),
                                                 np.full(int(position.max()), BYTE_BASE, np.uint64))), dtype=np.uint64)
        terms = (data.astype(np.uint64) + np.uint64(1)) * power_table[position]
        terms[~is_unit] = 0  # spaces between units add nothing
        hashes = np.add.reduceat(terms, starts)
    return hashes, starts


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


def signatures(texts: list[str], cfg: MinHashConfig, chunk: int = 4096) -> np.ndarray:
    """uint32 [len(texts), num_perm]: one MinHash signature per text."""
    normalized = [normalize_for_dedup(t).encode("utf-8") for t in texts]
    joined = np.frombuffer(b" ".join(normalized), dtype=np.uint8)
    doc_starts = np.cumsum([0] + [len(x) + 1 for x in normalized[:-1]])
    unit_h, unit_start = _unit_hashes(joined)
    doc_of_unit = np.searchsorted(doc_starts, unit_start, side="right") - 1
    shingle_h, shingle_doc = _shingle_hashes(unit_h, doc_of_unit, len(texts), cfg.ngram)
    mixed = _fmix32(_fold32(shingle_h))
    a, b = permutations(cfg)
    result = np.full((len(texts), cfg.num_perm), np.iinfo(np.uint32).max, np.uint32)
    a, b = a[:, None], b[:, None]
    for lo in range(0, len(mixed), chunk):  # chunks keep the [num_perm, shingles] block in cache
        h, docs = mixed[lo : lo + chunk], shingle_doc[lo : lo + chunk]
        permuted = a * h[None, :] + b
        bounds = np.nonzero(np.concatenate(([True], docs[1:] != docs[:-1])))[0]
        # A document can straddle two chunks: fold its minima into what the earlier chunk found.
        np.minimum.at(result, docs[bounds], np.minimum.reduceat(permuted, bounds, axis=1).T)
    return result


def shingle_count(texts: list[str], cfg: MinHashConfig) -> int:
    """How many shingles `signatures` hashes for these texts (for throughput figures)."""
    total = 0
    for t in texts:
        k = len(normalize_for_dedup(t).split())
        total += max(1, k - cfg.ngram + 1)
    return total
