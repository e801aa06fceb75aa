"""Paragraph dedup side by side, one run: tokenmill's dedup job with its paragraph step against Dolma's
paragraph dedup (its bloom filter, `dolma dedupe`) and datatrove's sentence dedup (3-sentence spans), where
they install (each in a venv of its own under .bench/), one process each, on the same corpus: documents of
real paragraphs (the sample and this machine's man pages, none shared) with boilerplate planted across
them, 40 notices of the kinds sites share, each in 0.5-10% of the documents.

Prints, per tool: seconds (one core), MB/s, the planted occurrences removed beyond each notice's first, and
the unique paragraphs removed.

    python -m benchmarks.bench_paragraphs [--megabytes 20] [--no-dolma] [--no-datatrove]
"""

import argparse
import gzip
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_scale import _paragraph_pools
from benchmarks.peer_venv import BENCH, peer_python

REPO = Path(__file__).resolve().parent.parent

KINDS = ["We use cookies to {x} your experience on our site. By continuing to browse you agree to our use of cookies.",
         "Subscribe to the {x} newsletter to get the latest articles delivered straight to your inbox every week.",
         "This article is licensed under a Creative Commons Attribution-ShareAlike 4.0 International License ({x}).",
         "Related articles from our network: {x}, and more stories you might like from partner sites.",
         "The views expressed in this article are those of the author and do not reflect the position of {x}."]
FILLERS = ["improve", "personalize", "Daily Digest", "Weekly Notes", "version 4", "the editors", "Example Media",
           "our sponsors"]


def corpus(folder: Path, megabytes: float, seed: int = 0) -> tuple[list[dict], list[str], int]:
    """(documents, the planted notices, planted occurrences), written as JSON Lines (tokenmill, datatrove) and
    Dolma's gzipped documents."""
    rng = random.Random(seed)
    pool = list(dict.fromkeys(_paragraph_pools(rng)["en"]))  # every paragraph once: the unique ones are unique
    rng.shuffle(pool)
    notices = [kind.format(x=filler) for kind in KINDS for filler in FILLERS]
    shares = [rng.uniform(0.005, 0.10) for _ in notices]
    docs, used, size, planted = [], 0, 0, 0
    while size < megabytes * 1e6 and used + 6 < len(pool):
        count = rng.randint(3, 6)
        body = pool[used:used + count]
        used += count
        for notice, share in zip(notices, shares):
            if rng.random() < share:
                body.insert(rng.randrange(len(body) + 1), notice)
                planted += 1
        text = "\n\n".join(body)
        docs.append({"id": f"doc-{len(docs)}", "text": text, "source": "bench"})
        size += len(text.encode())
    (folder / "jsonl").mkdir(parents=True)
    with open(folder / "jsonl" / "docs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(d) + "\n" for d in docs)
    (folder / "dolma" / "documents").mkdir(parents=True)
    with gzip.open(folder / "dolma" / "documents" / "docs.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps({**d, "added": "", "created": ""}) + "\n" for d in docs)
    return docs, notices, planted


def score(docs: list[dict], kept: dict[str, str], notices: list[str]) -> tuple[float, float]:
    """(the share of planted occurrences beyond each notice's first removed, the share of unique paragraphs
    removed) of kept texts by id."""
    notice_set = set(notices)
    planted = sum(p in notice_set for d in docs for p in d["text"].split("\n\n"))
    left = sum(p in notice_set for t in kept.values() for p in t.split("\n\n"))
    firsts = sum(any(n in d["text"] for d in docs) for n in notices)
    unique = [(d["id"], p) for d in docs for p in d["text"].split("\n\n") if p not in notice_set]
    lost = sum(p not in kept.get(i, "") for i, p in unique)
    return (planted - left) / max(1, planted - firsts), lost / max(1, len(unique))


def tokenmill(folder: Path, paragraphs: bool = True) -> tuple[float, dict[str, str]]:
    out = folder / f"tokenmill-{paragraphs}"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "jobs.dedup", "--input", str(folder / "jsonl"), "--output", str(out),
                    "--paragraphs.enabled", str(paragraphs).lower(), "--conf", "spark.master=local[1]"], cwd=REPO,
                   check=True, capture_output=True)
    seconds = time.perf_counter() - started
    import pyarrow.parquet as pq

    table = pq.read_table(out / "docs", columns=["id", "text"]).to_pydict()
    return seconds, dict(zip(table["id"], table["text"]))


def dolma(folder: Path, docs: list[dict]) -> tuple[float, dict[str, str]]:
    """`dolma dedupe` with its paragraph dedup (a bloom filter), then the spans it marks removed here."""
    python = peer_python("dolma-venv", ["dolma>=1.0,<2"])
    config = {"documents": [str(folder / "dolma" / "documents" / "*.gz")],
              "dedupe": {"name": "dups", "paragraphs": {"attribute_name": "para_dups"}, "skip_empty": True},
              "bloom_filter": {"file": str(folder / "dolma" / "bloom.bin"), "read_only": False,
                               "estimated_doc_count": 10 * len(docs), "desired_false_positive_rate": 1e-6},
              "processes": 1,
              "work_dir": {"input": str(folder / "dolma" / "in"), "output": str(folder / "dolma" / "o")}}
    (folder / "dolma" / "config.json").write_text(json.dumps(config))
    dolma_bin = str(Path(python).parent / "dolma")
    started = time.perf_counter()
    subprocess.run([dolma_bin, "-c", str(folder / "dolma" / "config.json"), "dedupe"], check=True,
                   capture_output=True)
    seconds = time.perf_counter() - started
    kept = {d["id"]: d["text"] for d in docs}
    for path in (folder / "dolma" / "attributes" / "dups").rglob("*.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                text = kept[row["id"]]
                for start, end, _ in sorted(row["attributes"].get("para_dups", []), reverse=True):
                    text = text[:start] + text[end:]
                kept[row["id"]] = "\n\n".join(p.strip() for p in text.split("\n\n") if p.strip())
    return seconds, kept


def datatrove(folder: Path) -> tuple[float, dict[str, str]]:
    """datatrove's sentence dedup (signature, find, filter), one task."""
    python = peer_python("datatrove-sentences-venv", ["datatrove>=0.4", "spacy", "tokenizers", "xxhash<4", "orjson"])
    script = folder / "datatrove_run.py"
    script.write_text(DATATROVE_SCRIPT.format(input=folder / "jsonl", work=folder / "datatrove"))
    started = time.perf_counter()
    subprocess.run([python, str(script)], check=True, capture_output=True)
    seconds = time.perf_counter() - started
    kept = {}
    for path in (folder / "datatrove" / "out").glob("*.jsonl*"):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            kept.update((row["id"], row["text"]) for row in map(json.loads, f))
    return seconds, kept


DATATROVE_SCRIPT = """
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.sentence_dedup import (SentDedupConfig, SentenceDedupFilter, SentenceDedupSignature,
                                                      SentenceFindDedups)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
sig, dups, out, config = "{work}/sigs", "{work}/dups", "{work}/out", SentDedupConfig()
for step, steps in enumerate([[JsonlReader("{input}"), SentenceDedupSignature(output_folder=sig, config=config)],
              [SentenceFindDedups(data_folder=sig, output_folder=dups, config=config)],
              [JsonlReader("{input}"), SentenceDedupFilter(data_folder=dups, config=config),
               JsonlWriter(out, compression=None)]]):
    LocalPipelineExecutor(pipeline=steps, tasks=1, workers=1, logging_dir=f"{work}/logs/{{step}}").run()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=float, default=20)
    parser.add_argument("--no-dolma", action="store_true")
    parser.add_argument("--no-datatrove", action="store_true")
    args = parser.parse_args()
    BENCH.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BENCH) as tmp:
        folder = Path(tmp)
        docs, notices, planted = corpus(folder, args.megabytes)
        megabytes = sum(len(d["text"].encode()) for d in docs) / 1e6
        print(f"{len(docs)} documents, {megabytes:.1f} MB, {planted} planted occurrences of {len(notices)} notices\n")
        print("| tool (one core) | seconds | MB/s | planted removed (beyond each first) | unique paragraphs removed |")
        print("|---|---|---|---|---|")
        tools = {"tokenmill dedup + paragraphs (Spark local[1], the job end to end)": lambda: tokenmill(folder),
                 "tokenmill dedup alone (the same job without the step)": lambda: tokenmill(folder, False)}
        if not args.no_dolma:
            tools["Dolma paragraph dedup (bloom filter; tagging only)"] = lambda: dolma(folder, docs)
        if not args.no_datatrove:
            tools["datatrove sentence dedup (3 sentences)"] = lambda: datatrove(folder)
        for name, tool in tools.items():
            try:
                seconds, kept = tool()
            except (subprocess.CalledProcessError, OSError) as e:
                print(f"| {name} | did not run: {str(e)[:120]} | | | |")
                continue
            removed, lost = score(docs, kept, notices)
            print(f"| {name} | {seconds:.1f} | {megabytes / seconds:.2f} | {removed:.2%} | {lost:.3%} |", flush=True)


if __name__ == "__main__":
    main()
