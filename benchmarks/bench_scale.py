"""Cost curves: every Spark stage (dedup also with its paragraph step) and the pipeline at 1x, 4x and 16x,
with datatrove's filters and MinHash.

    python -m benchmarks.bench_scale [--scales 1,4,16] [--base-mb 10] [--cores 2] [--no-datatrove]
    python -m benchmarks.bench_scale --two-workers   # the largest scale on 1, then 2 workers of 1 core

The corpora (made once per scale under .bench/scale/, deterministic for a seed): documents of real
paragraphs, drawn from the sample corpus (English and Chinese documentation) and the machine's man
pages, each a run of paragraphs from different documents of one language, about `--base-mb` MB of
JSON Lines at 1x; 5% of the documents are exact copies of others and 10% edited copies (reposts,
reflowed text, changed sentences, partial copies: tests/labelled/dedup_set.py).

Each stage runs as a user runs it (`python -m jobs.NAME ... --conf spark.master=local[CORES]`, its
own JVM, end to end) on the previous stage's output where it needs one; the pipeline runs alone on
the raw corpus. Per run: wall seconds, MB of input text per second per core, the peak resident
memory of the driver (the job's Python process and its JVM) and of the largest Spark Python worker
(sampled from /proc every 0.2 s), the shuffle bytes Spark wrote (from its event log), and the growth
exponent k from the previous scale (seconds ∝ size^k). datatrove runs its Gopher + C4 + FineWeb
filters and its four MinHash stages with the same number of processes on the same files.

With --two-workers: every stage at the largest scale on a Spark standalone cluster on 127.0.0.1
(tests/cluster/standalone.py) of one worker of one core, then of two workers of one core each, the
driver outside the workers; prints the speed-up per stage.
"""

import argparse
import glob
import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.bench_clean import datatrove_python, sample_texts
from benchmarks.bench_decontaminate import man_passages
from spark_stages.peak_memory import process_tree
from tests.labelled.dedup_set import EDITS, LabelledDoc, _edit

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO / ".bench" / "scale"


def _paragraph_pools(rng: random.Random) -> dict[str, list[str]]:
    pools: dict[str, list[str]] = {"en": [], "zh": []}
    for text in sample_texts():
        lang = "zh" if sum(ord(c) > 0x2E80 for c in text[:400]) > 60 else "en"
        pools[lang] += [p.strip() for p in text.split("\n\n") if len(p.strip()) > 40]
    # Man pages: passages of 25-70 words, grouped into paragraphs of real running text.
    pools["en"] += man_passages(60_000, rng)
    return pools


def build_corpus(folder: Path, megabytes: float, seed: int = 0) -> int:
    """Writes part-NNNN.jsonl files of about `megabytes` MB into folder; returns the documents."""
    rng = random.Random(seed)
    pools = _paragraph_pools(rng)
    originals, size, target = [], 0, megabytes * 1e6 * 0.85
    while size < target:
        lang = "zh" if rng.random() < 0.35 else "en"
        text = "\n\n".join(rng.sample(pools[lang], rng.randint(3, 14)))
        originals.append((lang, text))
        size += len(text.encode("utf-8")) + 40
    corpus = [text for _, text in originals]
    for _ in range(len(originals) * 5 // 85):
        corpus.append(rng.choice(corpus))
    texts = [text for _, text in originals]
    for i in rng.sample(range(len(originals)), len(originals) * 10 // 85):
        lang, text = originals[i]
        try:
            corpus.append(_edit(LabelledDoc(str(i), text, lang, str(i), "original"), rng.choice(EDITS), texts, rng))
        except (IndexError, ValueError):  # a document without sentences to change
            corpus.append(text[: len(text) // 2])
    rng.shuffle(corpus)
    folder.mkdir(parents=True, exist_ok=True)
    files = max(8, math.ceil(megabytes / 16))  # about 16 MB a file
    handles = [open(folder / f"part-{part:04d}.jsonl", "w", encoding="utf-8") for part in range(files)]
    for j, text in enumerate(corpus):
        handles[j % files].write(json.dumps({"id": f"doc-{j}", "text": text}, ensure_ascii=False) + "\n")
    for handle in handles:
        handle.close()
    return len(corpus)


def corpus_at(scale: int, base_mb: float) -> Path:
    folder = CORPORA / f"{base_mb:g}mb-x{scale}"
    if not (folder / "DONE").exists():
        build_corpus(folder, base_mb * scale, seed=scale)
        (folder / "DONE").write_text("")
    return folder


def text_megabytes(folder: Path) -> float:
    """MB of document text (UTF-8) in a folder of JSON Lines or Parquet, the rate's numerator."""
    import pyarrow.dataset as ds

    files = sorted(glob.glob(str(folder / "*.jsonl")))
    if files:
        return sum(len(json.loads(line)["text"].encode("utf-8"))
                   for f in files for line in open(f, encoding="utf-8")) / 1e6
    table = ds.dataset(str(folder), format="parquet").to_table(columns=["text"])
    return sum(len(t.encode("utf-8")) for t in table.column("text").to_pylist()) / 1e6


@dataclass
class Sampled:
    """Peak resident bytes of a process tree: the largest Spark Python worker, and the rest (the driver
    process and its JVM) together."""
    root: int
    driver: int = 0
    worker: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.wait(0.2):
            driver, worker = 0, 0
            for _pid, rss, cmdline in _tree(self.root):
                if b"pyspark.daemon" in cmdline or b"pyspark.worker" in cmdline:
                    worker = max(worker, rss)
                else:
                    driver += rss
            self.driver, self.worker = max(self.driver, driver), max(self.worker, worker)


def _tree(root: int) -> list[tuple[int, int, bytes]]:
    """(pid, resident bytes, command line) of `root` and its descendants."""
    found = []
    for pid, rss in process_tree(root):
        try:
            found.append((pid, rss, Path(f"/proc/{pid}/cmdline").read_bytes()))
        except OSError:  # ended while we looked
            continue
    return found


def shuffle_bytes(event_logs: Path) -> int:
    """Shuffle bytes written, summed over every task of the run's Spark event log."""
    total = 0
    for path in event_logs.rglob("*"):
        if not path.is_file() or path.name.startswith((".", "appstatus")):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if '"SparkListenerTaskEnd"' not in line:
                    continue
                metrics = json.loads(line).get("Task Metrics") or {}
                total += (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
    return total


@dataclass
class Run:
    stage: str
    scale: int
    megabytes: float
    seconds: float
    cores: int
    driver: int = 0
    worker: int = 0
    shuffle: int = 0


def run_job(stage: str, args: list[str], master: list[str], work: Path) -> tuple[float, Sampled, int]:
    """`master`: the --conf settings that say where the job runs."""
    logs = work / f"events-{stage}-{time.monotonic_ns()}"  # one job's alone (dedup runs twice)
    logs.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", f"jobs.{stage}", *args, *master,
               "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{logs}",
               "--conf", "spark.eventLog.compress=false"]
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sampled = Sampled(child.pid)
    sampler = threading.Thread(target=sampled.run, daemon=True)
    sampler.start()
    output = child.communicate()[0]
    seconds = time.perf_counter() - started
    sampled.stop.set()
    sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}):\n{output.decode()[-3000:]}")
    return seconds, sampled, shuffle_bytes(logs)


def benchmark_items(corpus: Path, work: Path) -> Path:
    """A benchmark file for the decontamination stage: 200 passages of the corpus's documents."""
    rng = random.Random(0)
    lines = open(sorted(corpus.glob("*.jsonl"))[0], encoding="utf-8").read().splitlines()
    items = []
    for line in rng.sample(lines, min(200, len(lines))):
        words = json.loads(line)["text"].split()
        at = rng.randrange(max(1, len(words) - 40))
        items.append({"id": str(len(items)), "text": " ".join(words[at:at + 40])})
    path = work / "benchmark.jsonl"
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    return path


def local(cores: int) -> list[str]:
    return ["--conf", f"spark.master=local[{cores}]"]


def tokenmill_runs(scale: int, corpus: Path, cores: int, vocab: int, master: list[str] | None = None,
                   label: str = "", only_clean: bool = False) -> list[Run]:
    """Every stage on the corpus (or the clean job only), each on the output of the one before;
    `master`: where (local[cores])."""
    master, runs = master or local(cores), []
    with tempfile.TemporaryDirectory(dir=CORPORA) as tmp:
        work = Path(tmp)
        raw_mb = text_megabytes(corpus)
        bench = benchmark_items(corpus, work)
        cleaned, deduplicated = work / "clean" / "docs", work / "dedup" / "docs"
        stages = [  # (stage, its input, its arguments)
            ("clean", corpus, ["--output", str(work / "clean")]),
            ("dedup", cleaned, ["--output", str(work / "dedup")]),
            # the same with the paragraph step (issue 50): its cost is the difference
            ("dedup", cleaned, ["--output", str(work / "dedup-paragraphs"), "--paragraphs.enabled", "true"]),
            ("decontaminate", deduplicated, ["--benchmark", f"scale={bench}", "--output", str(work / "decontaminate")]),
            ("train_tokenizer", deduplicated, ["--output", str(work / "tokenizer"), "--vocab-size", str(vocab)]),
            ("shards", deduplicated, ["--tokenizer", str(work / "tokenizer" / "tokenizer.json"), "--output",
                                      str(work / "shards")]),
            ("pipeline", corpus, ["--output", str(work / "pipeline"), "--vocab-size", str(vocab)]),
        ]
        for stage, source, args in stages[:1] if only_clean else stages:
            megabytes = raw_mb if source == corpus else text_megabytes(source)
            seconds, sampled, shuffled = run_job(stage, ["--input", str(source), *args], master, work)
            name = stage + (" + paragraphs" if "--paragraphs.enabled" in args else "") + label
            runs.append(Run(name, scale, megabytes, seconds, cores, sampled.driver, sampled.worker, shuffled))
            print(f"  {name} x{scale}: {seconds:.1f} s, {megabytes:.0f} MB", file=sys.stderr, flush=True)
    return runs


def transform_run(scale: int, corpus: Path, processes: int = 1) -> Run:
    """The cleaning transform alone over the corpus (reading the files not timed): what the Spark clean
    job is measured against. With several processes, each cleans every N-th file, all at once after
    every one has read its texts and warmed up: the same cores as the job's, busy together (on this
    machine two busy cores clean 9% slower each than one alone)."""
    if processes == 1:
        seconds, megabytes = _transform(corpus, 0, 1)
    else:
        context = multiprocessing.get_context("spawn")
        ready, results = context.Barrier(processes), context.Queue()
        workers = [context.Process(target=_transform, args=(corpus, i, processes, ready, results))
                   for i in range(processes)]
        for worker in workers:
            worker.start()
        timed = [results.get() for _ in workers]
        for worker in workers:
            worker.join()
        seconds, megabytes = max(t for t, _ in timed), sum(mb for _, mb in timed)
    label = f"clean transform, {processes} process{'es' if processes > 1 else ''}"
    print(f"  {label} x{scale}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return Run(label, scale, megabytes, seconds, processes)


def _transform(corpus: Path, part: int, parts: int, ready=None, results=None) -> tuple[float, float]:
    """(seconds, MB of text) of clean_texts over every `parts`-th file from `part`, 10,000 texts a call
    (also put in `results`, from a process of transform_run's)."""
    from prep.clean import CleanConfig, clean_texts

    files = sorted(corpus.glob("*.jsonl"))[part::parts]
    texts = [json.loads(line)["text"] for f in files for line in open(f, encoding="utf-8")]
    cfg = CleanConfig()
    clean_texts(texts[:20], cfg)  # the language model loaded, the kernels compiled
    if ready is not None:
        ready.wait()
    started, batch = time.perf_counter(), 10_000
    for at in range(0, len(texts), batch):
        clean_texts(texts[at:at + batch], cfg)
    timed = time.perf_counter() - started, sum(len(t.encode("utf-8")) for t in texts) / 1e6
    if results is not None:
        results.put(timed)
    return timed


def datatrove_runs(scale: int, corpus: Path, cores: int, python: str) -> list[Run]:
    megabytes = text_megabytes(corpus)
    runs = []
    with tempfile.TemporaryDirectory(dir=CORPORA) as tmp:
        started = time.perf_counter()
        subprocess.run([python, str(REPO / "benchmarks" / "datatrove_filters.py"), str(corpus), str(cores)],
                       check=True, capture_output=True)
        runs.append(Run("datatrove filters", scale, megabytes, time.perf_counter() - started, cores))
        started = time.perf_counter()
        subprocess.run([python, str(REPO / "benchmarks" / "datatrove_minhash.py"), str(corpus), tmp, str(cores)],
                       check=True, capture_output=True)
        runs.append(Run("datatrove MinHash", scale, megabytes, time.perf_counter() - started, cores))
    for run in runs:
        print(f"  {run.stage} x{scale}: {run.seconds:.1f} s", file=sys.stderr, flush=True)
    return runs


def cluster_runs(scale: int, corpus: Path, vocab: int) -> list[Run]:
    """Every stage on a standalone cluster of one worker of one core, then of two workers of one core
    each (tests/cluster/standalone.py; executors with this Python)."""
    from tests.cluster.standalone import StandaloneCluster

    runs = []
    for workers in (1, 2):
        with (tempfile.TemporaryDirectory(dir=CORPORA) as tmp,
              StandaloneCluster(Path(tmp), cores=1, memory="5g", workers=workers) as c):
            settings = {"spark.master": c.url, "spark.executor.cores": 1, "spark.executor.memory": "3g",
                        "spark.cores.max": workers, "spark.pyspark.python": sys.executable,
                        "spark.pyspark.driver.python": sys.executable}
            master = [part for key, value in settings.items() for part in ("--conf", f"{key}={value}")]
            runs += tokenmill_runs(scale, corpus, workers, vocab, master, f", {workers} worker{'s' * (workers > 1)}")
    return runs


def speedups(runs: list[Run]) -> list[str]:
    one = {r.stage.removesuffix(", 1 worker"): r for r in runs if r.stage.endswith(", 1 worker")}
    two = {r.stage.removesuffix(", 2 workers"): r for r in runs if r.stage.endswith(", 2 workers")}
    lines = ["| stage | 1 worker of 1 core, s | 2 workers of 1 core, s | speed-up |", "|---|---|---|---|"]
    for stage in one:
        if stage in two:
            lines.append(f"| {stage} | {one[stage].seconds:.1f} | {two[stage].seconds:.1f} | "
                         f"{one[stage].seconds / two[stage].seconds:.2f}x |")
    return lines


def table(runs: list[Run]) -> list[str]:
    lines = ["| stage | scale | MB of text | seconds | MB/s per core | k (vs previous scale) | driver peak MB "
             "| Python worker peak MB | shuffle MB |", "|---|---|---|---|---|---|---|---|---|"]
    previous: dict[str, Run] = {}
    for run in runs:
        before = previous.get(run.stage)
        k = (f"{math.log(run.seconds / before.seconds) / math.log(run.megabytes / before.megabytes):.2f}"
             if before else "")
        memory = [f"{run.driver / 2**20:.0f}" if run.driver else "", f"{run.worker / 2**20:.0f}" if run.worker else "",
                  f"{run.shuffle / 1e6:.1f}" if run.driver else ""]
        lines.append(f"| {run.stage} | {run.scale}x | {run.megabytes:.0f} | {run.seconds:.1f} | "
                     f"{run.megabytes / run.seconds / run.cores:.2f} | {k} | " + " | ".join(memory) + " |")
        previous[run.stage] = run
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="1,4,16", help="corpus sizes as multiples of --base-mb")
    parser.add_argument("--base-mb", type=float, default=10, help="MB of JSON Lines at 1x")
    parser.add_argument("--cores", type=int, default=2, help="Spark's local[N] and datatrove's processes")
    parser.add_argument("--vocab-size", type=int, default=32768, help="the tokenizer's (as make shards)")
    parser.add_argument("--no-datatrove", action="store_true", help="tokenmill's stages only")
    parser.add_argument("--datatrove-python", help="a Python that has datatrove installed")
    parser.add_argument("--json", help="also write every run as JSON here")
    parser.add_argument("--only-clean", action="store_true", help="the clean job and the bare transform only")
    parser.add_argument("--no-transform", action="store_true", help="the Spark stages only, not the bare cleaning "
                        "transform they are compared with (20 minutes at 160x)")
    parser.add_argument("--two-workers", action="store_true", help="only: every stage at the largest scale on a "
                        "standalone cluster of one worker of one core, then of two")
    args = parser.parse_args()
    python = None if args.no_datatrove or args.two_workers else datatrove_python(args.datatrove_python)
    CORPORA.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    if args.two_workers:
        scale = max(map(int, args.scales.split(",")))
        runs = cluster_runs(scale, corpus_at(scale, args.base_mb), args.vocab_size)
        print("\n".join(table(runs)) + "\n\n" + "\n".join(speedups(runs)))
        if args.json:
            Path(args.json).write_text(json.dumps([r.__dict__ for r in runs], indent=1) + "\n")
        return
    for scale in map(int, args.scales.split(",")):
        corpus = corpus_at(scale, args.base_mb)
        if not args.no_transform:
            runs += [transform_run(scale, corpus), transform_run(scale, corpus, args.cores)]
        runs += tokenmill_runs(scale, corpus, args.cores, args.vocab_size, only_clean=args.only_clean)
        if python:
            runs += datatrove_runs(scale, corpus, args.cores, python)
    runs.sort(key=lambda r: (r.stage, r.scale))
    print(f"{os.cpu_count()} cores on the machine, local[{args.cores}] and {args.cores} datatrove processes\n")
    print("\n".join(table(runs)))
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in runs], indent=1) + "\n")


if __name__ == "__main__":
    main()
