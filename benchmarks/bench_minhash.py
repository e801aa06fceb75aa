"""MinHash signatures per second on one core: tokenmill's compiled pass against datasketch (and rensa,
installed under .bench/ the first time), on any input the jobs read.

    python -m benchmarks.bench_minhash --input PATH [--num-perm 128] [--ngram 5]

Shingling is included on every side (normalization, units, shingles, hashing, permutations). The
process is pinned to one core. Prints a table, then as its last line one JSON object: shingles,
seconds, m_shingles_per_s, datasketch_m_shingles_per_s, equal_to_datasketch (signatures of at least
200 documents compared with datasketch's, value for value).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from prep.dedup.minhash import MinHashConfig, minhash_batch, shingle_hash32
from prep.dedup.shingles import shingles
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file

REPO = Path(__file__).resolve().parent.parent
RENSA = REPO / ".bench" / "rensa"
BATCH = 1024  # documents per call, about an Arrow batch of the job
COMPARED = 200


def documents(spec: str) -> list[str]:
    return [r.text for f in expand_inputs(spec) for r in read_file(f) if isinstance(r, Document)]


def ours(texts: list[str], cfg: MinHashConfig) -> tuple[int, float]:
    minhash_batch(texts[:8], cfg)  # compiled, or loaded from the cache, before the clock starts
    shingle_total, started = 0, time.perf_counter()
    for lo in range(0, len(texts), BATCH):
        shingle_total += int(minhash_batch(texts[lo:lo + BATCH], cfg).shingles.sum())
    return shingle_total, time.perf_counter() - started


def datasketch_rate(texts: list[str], cfg: MinHashConfig) -> tuple[float, np.ndarray]:
    from datasketch import MinHash

    started = time.perf_counter()
    sets = [[s.encode("utf-8") for s in shingles(t, cfg.ngram)] for t in texts]
    hashes = MinHash.bulk(sets, num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=shingle_hash32, scheme="affine32")
    seconds = time.perf_counter() - started
    return sum(map(len, sets)) / seconds, np.array([h.hashvalues for h in hashes], np.uint32)


def rensa_rate(texts: list[str], cfg: MinHashConfig) -> float | None:
    if not RENSA.exists():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(RENSA), "rensa==0.5.0"],
                              capture_output=True)
        if done.returncode != 0:
            return None
    sys.path.insert(0, str(RENSA))
    from rensa import RMinHash

    started, count = time.perf_counter(), 0
    for text in texts:
        found = shingles(text, cfg.ngram)
        m = RMinHash(num_perm=cfg.num_perm, seed=cfg.seed)
        m.update(found)
        m.digest()
        count += len(found)
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, help="files, directories or globs, as the jobs take them")
    parser.add_argument("--num-perm", type=int, default=128)
    parser.add_argument("--ngram", type=int, default=5)
    args = parser.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    cfg = MinHashConfig(num_perm=args.num_perm, ngram=args.ngram)
    texts = documents(args.input)
    total, seconds = ours(texts, cfg)
    subset = texts[:max(COMPARED, len(texts) // 10)]  # datasketch is slow: a tenth, at least 200 documents
    theirs, reference = datasketch_rate(subset, cfg)
    equal = bool(np.array_equal(minhash_batch(subset, cfg).signatures, reference))
    rensa = rensa_rate(subset, cfg)
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    print(f"{len(texts)} documents, {megabytes:.1f} MB, {total / 1e6:.2f} M shingles; {cfg.num_perm} permutations, "
          f"{cfg.ngram}-unit shingles, one core\n")
    print("| signatures, shingling included | M shingles/s | vs datasketch |")
    print("|---|---|---|")
    print(f"| tokenmill `minhash_batch` (compiled) | {total / seconds / 1e6:.2f} | {total / seconds / theirs:.1f}x |")
    print(f"| datasketch `MinHash.bulk` | {theirs / 1e6:.2f} | 1.0x |")
    if rensa is not None:
        print(f"| rensa `RMinHash` (its own hash: other values) | {rensa / 1e6:.2f} | {rensa / theirs:.1f}x |")
    print(f"\nsignatures equal to datasketch's on {len(subset)} documents: {equal}")
    print(json.dumps({"shingles": total, "seconds": round(seconds, 3),
                      "m_shingles_per_s": round(total / seconds / 1e6, 3),
                      "datasketch_m_shingles_per_s": round(theirs / 1e6, 3), "equal_to_datasketch": equal}))


if __name__ == "__main__":
    main()
