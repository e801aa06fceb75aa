"""MinHash signatures of whole batches of documents, in one compiled pass.

The scheme is datasketch 2.x's "affine32", pinned explicitly (datasketch 2.0 changed its default, and
signatures of different schemes cannot be compared): each shingle's 32-bit hash is pre-mixed with the
MurmurHash3 finalizer, then permutation k maps it to a_k * h + b_k mod 2^32, with (a, b) drawn by
datasketch from `numpy.random.RandomState(seed)`. The shingle hash is `shingle_hash32` below; a
signature here equals `datasketch.MinHash(num_perm, seed, hashfunc=shingle_hash32,
scheme="affine32")` updated with the same shingles (tests/prep/test_minhash.py checks it).

What makes it fast: no Python code runs per character, unit or shingle. A batch's texts go to a
numba kernel as one array of code points; it normalizes each through a per-code-point table built
from the rules of prep/dedup/shingles.py, CRC-32s each unit as it ends, rolls the shingle hash
over the last n units and applies the permutations with a branch-free minimum (a loop LLVM
vectorizes). The same pass writes the normalized text, whose BLAKE2b is the exact-duplicate key.
"""

import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prep.compiled import code_points_of, kernel, put_utf8
from prep.dedup.shingles import CodePointTable

UNIT_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd: the polynomial over unit hashes loses no bits


MAX_NUM_PERM = 16_384  # permutations (128 by default; FineWeb 112, RefinedWeb 20 bands of 450 = 9,000)
MAX_NGRAM = 64  # units per shingle (5 by default; 13 in GPT-3's filter, 24 characters in NeMo's)


@dataclass(frozen=True)
class MinHashConfig:
    num_perm: int = 128  # signature length; LSH bands x rows come from it and the threshold
    ngram: int = 5  # units per shingle (words, or CJK characters)
    seed: int = 1  # datasketch's default seed

    def __post_init__(self):
        # past MAX_NUM_PERM and MAX_NGRAM: a task's MemoryError (a traceback), or minutes (the LSH bands of
        # 65,536 permutations took 65 s on the driver; a 50,000-gram 9.5 s a document of 100,000 words)
        if (not 2 <= self.num_perm <= MAX_NUM_PERM or not 1 <= self.ngram <= MAX_NGRAM
                or not 0 <= self.seed < 2**32):  # numpy's RandomState takes 32 bits
            raise ValueError(f"num_perm must be from 2 to {MAX_NUM_PERM}, ngram from 1 to {MAX_NGRAM} and seed in "
                             f"[0, 2**32), got {self.num_perm}, {self.ngram}, {self.seed}")


def _fold32(h: np.ndarray) -> np.ndarray:
    return ((h >> np.uint64(32)) ^ h).astype(np.uint32)


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


# --- the compiled pass ----------------------------------------------------------------------------

def _crc_table() -> np.ndarray:
    """zlib's CRC-32 table (reflected polynomial 0xEDB88320)."""
    table = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[i] = c
    return table


CRC_TABLE = _crc_table()
_CODE_POINTS = CodePointTable()


@dataclass
class MinHashBatch:
    signatures: np.ndarray  # uint32 [documents, num_perm]
    shingles: np.ndarray  # int64 [documents]: shingles hashed (1 for a document shorter than n units)
    normalized: list[bytes]  # each document's normalized text, UTF-8, units separated by single spaces
    lengths: np.ndarray  # int64 [documents]: each text's length in characters (code points)


def minhash_batch(texts: "list[str] | pa.StringArray", cfg: MinHashConfig) -> MinHashBatch:
    """Signatures, shingle counts and normalized texts of a batch of documents (a list, or an Arrow
    string column read straight from its UTF-8)."""
    code_points, starts = code_points_of(texts)
    table = _CODE_POINTS
    table.cover(code_points)
    room = 4 * int(table.length[code_points].sum(dtype=np.int64)) + len(code_points) + 1  # UTF-8: 4 bytes a code point
    out, out_starts = np.empty(room, np.uint8), np.zeros(len(texts) + 1, np.int64)
    a, b = permutations(cfg)
    sigs = np.empty((len(texts), cfg.num_perm), np.uint32)
    counts = np.empty(len(texts), np.int64)
    _minhash_kernel(code_points, starts, table.start, table.length, table.data, CRC_TABLE, a, b, cfg.ngram,
                    sigs, counts, out, out_starts)
    blob = out.tobytes()
    return MinHashBatch(sigs, counts, [blob[out_starts[i]:out_starts[i + 1]] for i in range(len(texts))],
                        np.diff(starts))


def signatures(texts: list[str], cfg: MinHashConfig) -> np.ndarray:
    """uint32 [len(texts), num_perm]: one MinHash signature per text."""
    return minhash_batch(texts, cfg).signatures


@kernel
def _apply(h, a, b, signature):
    """One shingle of 64-bit hash h: datasketch's mixing, then every permutation's minimum."""
    m = np.uint32(((h >> np.uint64(32)) ^ h) & np.uint64(0xFFFFFFFF))  # fold to 32 bits
    m = m ^ (m >> np.uint32(16))  # MurmurHash3's finalizer
    m = np.uint32(m * np.uint32(0x85EBCA6B))
    m = m ^ (m >> np.uint32(13))
    m = np.uint32(m * np.uint32(0xC2B2AE35))
    m = m ^ (m >> np.uint32(16))
    for k in range(len(a)):  # branch-free: LLVM vectorizes the loop
        signature[k] = min(signature[k], np.uint32(a[k] * m + b[k]))


UNIT_BASE_VALUE = int(UNIT_BASE)


@kernel
def _unit_done(crc, ring, units, a, b, signature) -> int:
    """Records the CRC-32 of the unit number `units` of a document; once there are n units, hashes the
    shingle it ends (a polynomial over its n units). Returns the shingles hashed (0 or 1)."""
    n = len(ring)
    ring[units % n] = np.uint64(crc ^ np.uint32(0xFFFFFFFF))
    if units + 1 < n:
        return 0
    h = np.uint64(0)
    for k in range(units + 1 - n, units + 1):
        h = h * np.uint64(UNIT_BASE_VALUE) + ring[k % n]
    _apply(h, a, b, signature)
    return 1


@kernel
def _minhash_kernel(code_points, starts, table_start, table_length, table_data, crc_table, a, b, n,
                    signatures, counts, out, out_starts):
    ring = np.zeros(n, np.uint64)  # the last n units' CRC-32s
    pos = 0
    for d in range(len(starts) - 1):
        out_starts[d] = pos
        signature = signatures[d]
        signature[:] = np.uint32(0xFFFFFFFF)
        units, shingles, crc, in_unit = 0, 0, np.uint32(0xFFFFFFFF), False
        for i in range(starts[d], starts[d + 1]):
            cp = code_points[i]
            for j in range(table_start[cp], table_start[cp] + table_length[cp]):
                c = table_data[j]
                if c == 32:  # a separator: the open unit, if any, ends
                    if in_unit:
                        shingles += _unit_done(crc, ring, units, a, b, signature)
                        units, crc, in_unit = units + 1, np.uint32(0xFFFFFFFF), False
                    continue
                if not in_unit and units > 0:
                    out[pos] = 32
                    pos += 1
                in_unit = True
                # the UTF-8 bytes of c, into the normalized text and the unit's CRC-32
                end = put_utf8(c, out, pos)
                for q in range(pos, end):
                    crc = crc_table[(crc ^ np.uint32(out[q])) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
                pos = end
        if in_unit:
            shingles += _unit_done(crc, ring, units, a, b, signature)
            units += 1
        if units < n:  # shorter than a shingle: one shingle of all its units (hash 0 for an empty text)
            h = np.uint64(0)
            for k in range(units):
                h = h * np.uint64(UNIT_BASE_VALUE) + ring[k]
            _apply(h, a, b, signature)
            shingles = 1
        counts[d] = shingles
    out_starts[len(starts) - 1] = pos
