"""Dedup speed side by side: tokenmill's Spark job, datatrove's MinHash pipeline, datasketch's MinHashLSH.

    python -m benchmarks.bench_dedup [--copies 2] [--datatrove-python PATH]

The corpus: every document of the sample plus `--copies` edited copies of each (reposts, reflowed
text, changed sentences, partial copies; tests/labelled/dedup_set.py), as 8 JSON Lines files: real text
with real near duplicates, about 30 MB with the default. The same files, the same machine, one run:
  - tokenmill: `python -m jobs.dedup` in local[2], end to end (JVM start included);
  - datatrove: its four MinHash stages with 2 workers (a throwaway venv under .bench/);
  - datasketch: MinHash + MinHashLSH in one process (signatures, then query-or-insert, longest first).
Also the signature rate alone, shingling included: tokenmill's vectorized signatures against
datasketch's MinHash.bulk, 128 permutations, one core.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_clean import datatrove_python, sample_texts
from prep.dedup.minhash import MinHashConfig, shingle_count, signatures
from prep.dedup.shingles import shingles
from tests.labelled.dedup_set import EDITS, LabelledDoc, _edit

REPO = Path(__file__).resolve().parent.parent


def build_corpus(folder: Path, copies: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    texts = sample_texts()
    corpus = []
    for i, text in enumerate(texts):
        corpus.append(text)
        lang = "zh" if sum(ord(c) > 0x2E80 for c in text[:200]) > 50 else "en"
        doc = LabelledDoc(str(i), text, lang, str(i), "original")
        for kind in rng.sample(EDITS, copies):
            try:
                corpus.append(_edit(doc, kind, texts, rng))
            except (IndexError, ValueError):  # a document without sentences to change
                corpus.append(text[: len(text) // 2])
    rng.shuffle(corpus)
    folder.mkdir(parents=True, exist_ok=True)
    for part in range(8):
        with open(folder / f"part-{part}.jsonl", "w", encoding="utf-8") as f:
            for j in range(part, len(corpus), 8):
                f.write(json.dumps({"id": f"doc-{j}", "text": corpus[j]}, ensure_ascii=False) + "\n")
    return corpus


def time_tokenmill(folder: Path, work: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "jobs.dedup", "--input", str(folder), "--output", str(work / "tokenmill"),
                    "--conf", "spark.master=local[2]"], cwd=REPO, check=True, capture_output=True)
    seconds = time.perf_counter() - started
    return seconds, json.loads((work / "tokenmill" / "stats.json").read_text())


def time_datatrove(folder: Path, work: Path, python: str) -> tuple[float, dict]:
    started = time.perf_counter()
    script = str(REPO / "benchmarks" / "datatrove_minhash.py")
    out = subprocess.run([python, script, str(folder), str(work / "dt"), "2"],
                         check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - started, json.loads(out.strip().splitlines()[-1])


def time_datasketch(corpus: list[str]) -> tuple[float, int]:
    from datasketch import MinHash, MinHashLSH

    started = time.perf_counter()
    lsh, kept = MinHashLSH(threshold=0.8, num_perm=128), 0
    for i in sorted(range(len(corpus)), key=lambda k: -len(corpus[k])):
        m = MinHash(num_perm=128)
        m.update_batch([s.encode("utf-8") for s in shingles(corpus[i], 5)])
        if not lsh.query(m):
            lsh.insert(i, m)
            kept += 1
    return time.perf_counter() - started, kept


def signature_rates(corpus: list[str]) -> tuple[float, float, int]:
    """Shingles per second on one core: tokenmill's signatures, datasketch's MinHash.bulk (both with shingling)."""
    from datasketch import MinHash

    cfg = MinHashConfig()
    n = shingle_count(corpus, cfg)
    started = time.perf_counter()
    for lo in range(0, len(corpus), 1000):  # Arrow-batch-sized calls, as in the job
        signatures(corpus[lo : lo + 1000], cfg)
    ours = n / (time.perf_counter() - started)
    subset = corpus[: len(corpus) // 10]
    started = time.perf_counter()
    MinHash.bulk([[s.encode("utf-8") for s in shingles(t, 5)] for t in subset], num_perm=128)
    theirs = shingle_count(subset, cfg) / (time.perf_counter() - started)
    return ours, theirs, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=2, help="edited copies of each sample document (1-4)")
    parser.add_argument("--datatrove-python", help="a Python with datatrove and spacy installed")
    args = parser.parse_args()
    python = datatrove_python(args.datatrove_python)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = build_corpus(work / "corpus", args.copies)
        megabytes = sum(os.path.getsize(p) for p in (work / "corpus").iterdir()) / 1e6
        ours, stats = time_tokenmill(work / "corpus", work)
        theirs, dt = time_datatrove(work / "corpus", work, python)
        sketch, sketch_kept = time_datasketch(corpus)
        rate, bulk_rate, n_shingles = signature_rates(corpus)
    print(f"{len(corpus)} documents, {megabytes:.1f} MB of JSON Lines, {n_shingles / 1e6:.1f} M shingles, 2 cores\n")
    print("| tool | wall seconds | vs datatrove | kept |")
    print("|---|---|---|---|")
    print(f"| tokenmill `jobs.dedup`, local[2], end to end | {ours:.1f} | {ours / theirs:.2f}x | {stats['kept']} |")
    print(f"| datatrove MinHash, 4 stages, 2 workers | {theirs:.1f} | 1.00x | |")
    print(f"| datasketch MinHash + MinHashLSH, 1 process | {sketch:.1f} | {sketch / theirs:.2f}x | {sketch_kept} |")
    print(f"\ntokenmill stages (s): {stats['seconds']}")
    print(f"datatrove stages (s): { {k: round(v, 1) for k, v in dt['seconds'].items()} }")
    print("\n| signatures, shingling included, 128 permutations, 1 core | M shingles/s |")
    print("|---|---|")
    print(f"| tokenmill `prep.dedup.minhash.signatures` | {rate / 1e6:.2f} |")
    print(f"| datasketch `MinHash.bulk` | {bulk_rate / 1e6:.2f} |")


if __name__ == "__main__":
    main()
