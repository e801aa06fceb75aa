"""LSH banding over MinHash signatures, and the estimated Jaccard similarity used to verify pairs."""

import functools
import hashlib
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prep.dedup.minhash import MinHashConfig, minhash_batch

BAND_BASE = np.uint64(0xD6E8FEB86659FD93)


@dataclass(frozen=True)
class LshParams:
    bands: int
    rows: int


@functools.cache
def lsh_params(threshold: float, num_perm: int) -> LshParams:
    """datasketch's optimal bands x rows for the threshold (equal weight on false positives and negatives)."""
    from datasketch.lsh import _optimal_param  # here: importing datasketch imports SciPy's integrators (0.4 s)

    bands, rows = _optimal_param(threshold, num_perm, 0.5, 0.5)
    return LshParams(bands, rows)


def band_hashes(sigs: np.ndarray, params: LshParams) -> np.ndarray:
    """int64 [docs, bands]: one bucket key per band (a polynomial hash of the band's rows)."""
    h = np.zeros((sigs.shape[0], params.bands), np.uint64)
    with np.errstate(over="ignore"):
        for r in range(params.rows):
            h = h * BAND_BASE + sigs[:, r : params.bands * params.rows : params.rows].astype(np.uint64)
    return h.view(np.int64)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Share of equal positions between signature rows: an unbiased estimate of Jaccard similarity."""
    return (a == b).mean(axis=-1)


def estimated_size(signatures: np.ndarray) -> np.ndarray:
    """The number of distinct shingles behind each signature row [documents, num_perm], at least 1: each value
    is the least of that many uniform 32-bit hashes (datasketch's MinHash.count()). Counting the shingles
    as they are hashed would count a repeated line's every time."""
    return np.maximum(1.0, signatures.shape[1] / (signatures / 2.0 ** 32).sum(axis=1) - 1)


def estimated_containment(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The share of each `a` row's distinct shingles that its `b` row holds, from their signatures alone:
    |A ∩ B| / |A| = J (|A| + |B|) / ((1 + J) |A|), each term estimated; at most 1."""
    jaccard, size_a, size_b = estimated_jaccard(a, b), estimated_size(a), estimated_size(b)
    return np.minimum(1.0, jaccard * (size_a + size_b) / ((1 + jaccard) * size_a))


def id_hash(doc_id: str) -> int:
    """A signed 64-bit hash of an id: the tie-breaker of the survivor rule."""
    return int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little",
                          signed=True)


def exact_hash(normalized: bytes) -> bytes:
    """128 bits of the normalized text: documents equal after normalization are exact duplicates."""
    return hashlib.blake2b(normalized, digest_size=16).digest()


def _of_raw_text(text, num_perm: int) -> tuple[bytes, np.ndarray]:
    """(exact hash, signature) of a text that normalizes to nothing (punctuation, white space or symbols
    alone), from its raw text: such texts had all been one exact duplicate, and one near one (one signature
    for no shingle), and all but one removed. A copy of the same text is still an exact duplicate; any other
    text's signature is as unlike as random values are (no LSH band in common)."""
    raw = (text.as_py() if isinstance(text, pa.Scalar) else text).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(raw, digest_size=16, person=b"tokenmill-raw").digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    return digest, rng.integers(0, 1 << 32, num_perm, dtype=np.uint32)


def document_features(ids: list[str], texts: "list[str] | pa.StringArray", cfg: MinHashConfig) -> dict[str, list]:
    """Everything dedup needs per document, for one batch: survivor-rule keys, exact hash, signature,
    and for the stats the shingles hashed and each document's share of the batch's signature seconds."""
    started = time.perf_counter()
    batch = minhash_batch(texts, cfg)  # one pass: signatures and the normalized texts
    exact, signatures = [exact_hash(n) for n in batch.normalized], batch.signatures
    for i in (i for i, normalized in enumerate(batch.normalized) if not normalized):
        exact[i], signatures[i] = _of_raw_text(texts[i], cfg.num_perm)
    seconds = time.perf_counter() - started
    return {
        "id_hash": [id_hash(i) for i in ids],
        "text_len": batch.lengths,
        "exact_hash": exact,
        "signature": list(map(bytes, signatures)),
        "shingles": batch.shingles,
        "signature_seconds": np.full(len(texts), seconds / max(1, len(texts))),
    }
