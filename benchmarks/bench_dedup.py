"""Dedup speed side by side: tokenmill's Spark job, datatrove's MinHash pipeline, datasketch's MinHashLSH.

    python -m benchmarks.bench_dedup [--copies 2] [--datatrove-python PATH]

The corpus: every document of the sample plus `--copies` edited copies of each (reposts, reflowed
text, changed sentences, partial copies; tests/labelled/dedup_set.py), as 8 JSON Lines files: real text
with real near duplicates, about 30 MB with the default. The same files, the same machine, one run:
  - tokenmill: `python -m jobs.dedup` in local[2], end to end (JVM start included; its JVM maps the class
    archive an earlier job recorded, as every job after the first on a machine does: the table says so);
  - datatrove: its four MinHash stages with 2 workers (a throwaway venv under .bench/);
  - datasketch: MinHash + MinHashLSH in one process (signatures, then query-or-insert, longest first).
The signature rate alone, against datasketch and rensa on one core, is `make bench-minhash`.
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


def class_archive_state() -> str:
    """Whether the job's JVM maps a class archive (README, "Every job's command line"): a first run records it."""
    from spark_stages.class_archive import archive_path
    from spark_stages.java import ensure_java

    path = archive_path(ensure_java(), {})
    if path is None:
        return "off"
    return "mapped (recorded by an earlier run)" if path.is_file() else "none yet: this run records it (slower)"


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
        archive = class_archive_state()
        ours, stats = time_tokenmill(work / "corpus", work)
        theirs, dt = time_datatrove(work / "corpus", work, python)
        sketch, sketch_kept = time_datasketch(corpus)
    print(f"{len(corpus)} documents, {megabytes:.1f} MB of JSON Lines, {stats['shingles'] / 1e6:.1f} M shingles, "
          "2 cores\n")
    print("| tool | wall seconds | vs datatrove | kept |")
    print("|---|---|---|---|")
    print(f"| tokenmill `jobs.dedup`, local[2], end to end | {ours:.1f} | {ours / theirs:.2f}x | {stats['kept']} |")
    print(f"| datatrove MinHash, 4 stages, 2 workers | {theirs:.1f} | 1.00x | |")
    print(f"| datasketch MinHash + MinHashLSH, 1 process | {sketch:.1f} | {sketch / theirs:.2f}x | {sketch_kept} |")
    print(f"\ntokenmill's JVM class archive: {archive}")
    print(f"tokenmill stages (s): {stats['seconds']}")
    print(f"datatrove stages (s): { {k: round(v, 1) for k, v in dt['seconds'].items()} }")
    print(f"tokenmill signatures: {stats['shingles'] / max(stats['signature_seconds'], 1e-9) / 1e6:.2f} M shingles/s "
          "per core (the compiled pass inside the job)")


if __name__ == "__main__":
    main()
