"""Loader benchmark: ShardLoader against pyarrow alone, a NumPy memmap (Megatron's way),
litdata and mosaicml-streaming, on the same tokens, in one run.

    python -m benchmarks.bench_loader [--shards out/sample/shards] [--copies N] [--work .bench/loader]
                                      [--repeats 3] [--peers-python .bench/loader-venv/bin/python] [--no-peers]

The shards are copied `--copies` times (renamed, one index; by default as many as make 1 GB or more
of uint32 tokens). Every reader delivers shuffled int64 batches [8, seq_len] (seq_len from the
index; make the shards with --seq-len 2048 for the issue's [8, 2048]). The files sit in the page
cache after the copy, so "cold" means not yet decompressed, not read from SSD. litdata and
mosaicml-streaming run in their own venv (created under .bench/ the first time, see loader_peers.py)
over the same rows written in their formats with zstd.

pyarrow, ShardLoader (threads, then 2 workers) and the memmap take turns `--repeats` times, each
loader in a fresh L2: on a machine of 2 cores one pass varies by ~10% from run to run, so the table
shows each one's median and the ratios of the medians, and the ratio of every turn is printed below.
"""

import argparse
import json
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from loaders import ShardLoader
from schemas.shards import shard_name
from spark_stages.peak_memory import PeakMemory, tree_pss

BATCH = 8
GIGABYTE = 10**9
REPO = Path(__file__).resolve().parents[1]
PEERS_VENV = REPO / ".bench" / "loader-venv"


def replicate(shards: Path, work: Path, copies: int) -> dict:
    index = json.loads((shards / "index.json").read_text())
    work.mkdir(parents=True, exist_ok=True)
    entries = []
    for _ in range(copies):
        for entry in index["shards"]:
            name = shard_name(len(entries))
            if not (work / name).exists():
                shutil.copy(shards / entry["file"], work / name)
            entries.append({**entry, "file": name})
    index["shards"] = entries
    for key in ("rows", "tokens", "real_tokens", "bytes"):
        index["totals"][key] = sum(e[key] for e in entries)
    index["totals"]["shards"] = len(entries)
    (work / "index.json").write_text(json.dumps(index, indent=2))
    return index


def read_files(folder: Path) -> None:
    """Reads every file once, so that every turn finds the shards in the page cache (the copy is skipped
    when a previous run made it)."""
    for path in sorted(folder.iterdir()):
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def pyarrow_pass(folder: Path, index: dict) -> float:
    """Seconds to read and decompress every shard with pyarrow alone."""
    started = time.perf_counter()
    for entry in index["shards"]:
        with pa.memory_map(str(folder / entry["file"])) as source:
            pa.ipc.open_file(source).read_all()
    return time.perf_counter() - started


def write_token_rows(folder: Path, index: dict, path: Path) -> None:
    """The shards' rows as uint32, each padded to seq_len: what the memmap and the peers read."""
    if path.exists() and path.stat().st_size == 4 * index["totals"]["rows"] * index["seq_len"]:
        return
    with open(path, "wb") as out:
        for entry in index["shards"]:
            with pa.memory_map(str(folder / entry["file"])) as source:
                table = pa.ipc.open_file(source).read_all()
            for row in table.column("tokens").to_numpy(zero_copy_only=False):
                padded = np.full(index["seq_len"], index["pad_id"], dtype=np.uint32)
                padded[:len(row)] = row
                out.write(padded.tobytes())


def epoch_pass(loader: ShardLoader, batches: int) -> tuple[float, float]:
    """(tokens/s over `batches` batches, seconds to the first)."""
    started, first, tokens = time.perf_counter(), None, 0
    for _ in range(batches):
        tokens += next(loader)["input_ids"].numel()
        first = first if first is not None else time.perf_counter() - started
    return tokens / (time.perf_counter() - started), first


def loader_passes(folder: Path, index: dict, workers: int) -> dict:
    """Cold first epoch (nothing in L2), warm second epoch, and the time to a first batch: fresh,
    resumed with L2 warm (another process of the node still holds it), resumed with L2 cold."""
    batches = index["totals"]["rows"] // BATCH
    started = time.perf_counter()
    loader = ShardLoader(str(folder), BATCH, seed=0, num_workers=workers)
    next(loader)
    first = time.perf_counter() - started
    cold, _ = epoch_pass(loader, batches - 1)
    warm, _ = epoch_pass(loader, batches)
    state = loader.state_dict()
    state["position"] += (batches // 2) * BATCH
    resume_warm = time_to_resume(folder, state, workers)
    stats = loader.stats()
    loader.close()  # the last one attached: L2 is gone
    return {"cold": cold, "warm": warm, "first": first, "resume_warm": resume_warm,
            "resume_cold": time_to_resume(folder, state, workers), "stats": stats}


def median_passes(runs: list[dict]) -> dict:
    """Each timing's median over repeated loader_passes; the last run's stats."""
    return {**{key: statistics.median(run[key] for run in runs) for key in runs[0] if key != "stats"},
            "stats": runs[-1]["stats"]}


def time_to_resume(folder: Path, state: dict, workers: int) -> float:
    """Seconds from a new loader to its first batch after load_state_dict."""
    started = time.perf_counter()
    resumed = ShardLoader(str(folder), BATCH, seed=0, num_workers=workers)
    resumed.load_state_dict(state)
    next(resumed)
    seconds = time.perf_counter() - started
    resumed.close()
    return seconds


def memmap_pass(path: Path, seq_len: int, batches: int) -> float:
    """Random [8, seq_len] windows of the flat uint32 file, as int64 tensors."""
    import torch

    data = np.memmap(path, dtype=np.uint32, mode="r")
    rng = np.random.default_rng(0)
    started, tokens = time.perf_counter(), 0
    for _ in range(batches):
        starts = rng.integers(0, len(data) - seq_len - 1, BATCH)
        batch = torch.from_numpy(np.stack([data[s:s + seq_len] for s in starts]).astype(np.int64))
        tokens += batch.numel()
    return tokens / (time.perf_counter() - started)


def rank_epoch(folder: str, rank: int, world: int, workers: int, barrier) -> None:
    loader = ShardLoader(folder, BATCH, rank=rank, world_size=world, num_workers=workers)
    for _ in range(loader.sets[0].order.epoch_size // (BATCH * world)):
        next(loader)
    barrier.wait()
    loader.close()


def node_peak_memory(folder: Path, ranks: int = 2, workers: int = 2) -> int:
    """Peak PSS of `ranks` processes with `workers` L3 workers each, reading one epoch (shared pages,
    the arena's among them, count once)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(ranks)
    with PeakMemory(interval=0.2, measure=tree_pss) as peak:
        processes = [context.Process(target=rank_epoch, args=(str(folder), r, ranks, workers, barrier))
                     for r in range(ranks)]
        for p in processes:
            p.start()
        for p in processes:
            p.join()
    return peak.bytes


def ensure_peers_venv(python: str) -> None:
    """litdata and mosaicml-streaming in a venv of their own (neither is a tokenmill dependency)."""
    if not Path(python).exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        subprocess.run([str(PEERS_VENV / "bin" / "pip"), "install", "-q", "torch==2.13.0", "numpy", "zstandard",
                        "litdata>=0.2.50,<0.3", "mosaicml-streaming>=0.11,<0.14"], check=True)


def peers(python: str, tokens: Path, seq_len: int, work: Path) -> list[dict]:
    ensure_peers_venv(python)
    out = subprocess.run([python, str(REPO / "benchmarks" / "loader_peers.py"), "--tokens", str(tokens),
                          "--seq-len", str(seq_len), "--work", str(work)], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", default="out/sample/shards")
    parser.add_argument("--copies", type=int, help="default: enough for 1 GB of uint32 tokens")
    parser.add_argument("--work", default=".bench/loader")
    parser.add_argument("--repeats", type=int, default=3, help="turns of pyarrow and the loaders (medians shown)")
    parser.add_argument("--peers-python", default=str(PEERS_VENV / "bin" / "python"))
    parser.add_argument("--no-peers", action="store_true", help="skip litdata and mosaicml-streaming (and their venv)")
    args = parser.parse_args()
    work = Path(args.work)
    tokens = json.loads((Path(args.shards) / "index.json").read_text())["totals"]["tokens"]
    index = replicate(Path(args.shards), work / "shards", args.copies or -(-GIGABYTE // (4 * tokens)))
    total, seq_len, folder = index["totals"]["tokens"], index["seq_len"], work / "shards"
    write_token_rows(folder, index, work / "tokens.bin")
    read_files(folder)
    turns = [(total / pyarrow_pass(folder, index), loader_passes(folder, index, 0), loader_passes(folder, index, 2),
              memmap_pass(work / "tokens.bin", seq_len, index["totals"]["rows"] // BATCH)) for _ in range(args.repeats)]
    pyarrow_rate, memmap = (statistics.median(turn[k] for turn in turns) for k in (0, 3))
    alone, with_workers = median_passes([turn[1] for turn in turns]), median_passes([turn[2] for turn in turns])
    peak = node_peak_memory(folder)
    others = [] if args.no_peers else peers(args.peers_python, work / "tokens.bin", seq_len, work / "peers")
    litdata = {r["workers"]: r for r in others if r.get("loader") == "litdata"}
    mosaic = {r["workers"]: r for r in others if r.get("loader") == "mosaicml-streaming"}

    decoded = alone["stats"]["bytes_decompressed"]
    print(f"{total / 1e6:.0f} M tokens ({total * 4 / 1e9:.2f} GB as uint32) in {len(index['shards'])} shards, "
          f"batches [{BATCH}, {seq_len}] int64\n")
    print("| reader | workers | M tokens/s | ratio | first batch (s) | decompressed copy on disk |")
    print("|---|---|---|---|---|---|")
    print(f"| pyarrow alone: read and decompress every shard | 0 | {pyarrow_rate / 1e6:.1f} | 1.00x | | none |")
    for workers, run in ((0, alone), (2, with_workers)):
        print(f"| ShardLoader, first pass (cold L2) | {workers} | {run['cold'] / 1e6:.1f} | "
              f"{run['cold'] / pyarrow_rate:.2f}x of pyarrow | {run['first']:.3f} | none |")
        print(f"| ShardLoader, second pass (warm L2) | {workers} | {run['warm'] / 1e6:.1f} | "
              f"{run['warm'] / memmap:.2f}x of memmap | | none |")
    print(f"| NumPy memmap, random windows (uncompressed file) | 0 | {memmap / 1e6:.1f} | 1.00x | | the whole file |")
    for name, runs in (("litdata TokensLoader", litdata), ("mosaicml-streaming StreamingDataset", mosaic)):
        for workers, run in sorted(runs.items()):
            ours = (alone if workers == 0 else with_workers)["cold"]
            print(f"| {name}, first pass | {workers} | {run['tokens_per_s'] / 1e6:.1f} | ShardLoader cold is "
                  f"{ours / run['tokens_per_s']:.1f}x | {run['first_batch_s']:.3f} | "
                  f"{run['disk_bytes'] / 1e9:.2f} GB |")
    ratios = [", ".join(f"{turn[k]['cold'] / turn[0]:.2f}" for turn in turns) for k in (1, 2)]
    print(f"\nmedians of {args.repeats} turns; first pass x of pyarrow in each turn: {ratios[0]} (threads), "
          f"{ratios[1]} (2 workers)")
    print(f"ShardLoader resume to the first batch: {alone['resume_warm']:.3f} s with L2 warm, "
          f"{alone['resume_cold']:.3f} s cold (workers 2: {with_workers['resume_warm']:.3f} / "
          f"{with_workers['resume_cold']:.3f} s)")
    print(f"decompressed once: {decoded / 1e9:.2f} GB in L2 ({alone['stats']['node_decompressions']} shards, "
          f"{alone['stats']['cache_hits']} hits, {alone['stats']['rereads']} rereads)")
    print(f"peak memory, 2 ranks x 2 workers on one node, one epoch: {peak / 2**30:.2f} GiB PSS "
          "(the shared arena counted once)")
    for line in others:
        if "prepare" in line and line["seconds"]:
            print(f"writing the {line['prepare']} copy took {line['seconds']:.0f} s")


if __name__ == "__main__":
    main()
