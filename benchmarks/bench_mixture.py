"""Mixture benchmark: three sources with weights through ShardLoader, mosaicml-streaming
`Stream(proportion=...)` and litdata `CombinedStreamingDataset(weights=...)`, on the same rows, in
one run: tokens/s against the same tool reading one source of the same rows, and the largest
deviation of a source's rows from its weight over every window of 1, 10 and 100 global batches.

    python -m benchmarks.bench_mixture [--shards out/sample/shards] [--copies 96,48,16]
        [--weights 0.5,0.3,0.2] [--batches 6000] [--work .bench/mixture]

The sources are copies of one shards folder (web, zh, code: `--copies` shards each; their sizes
differ from their weights, so code repeats); "one source" is all of those copies in one folder.
Batches are [8, seq_len] int64, no DataLoader workers, the first pass (nothing decompressed yet).
The peers' copies are written once into --work (delete it after changing --copies).
"""

import argparse
import json
import subprocess
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from benchmarks.bench_loader import BATCH, PEERS_VENV, REPO, ensure_peers_venv, replicate, write_token_rows
from loaders import ShardLoader

NAMES = ("web", "zh", "code")
MARKER = 1 << 30  # as in mixture_peers.py
WINDOWS = (1, 10, 100)


def tokenmill_pass(shards, batches: int, weights: dict | None) -> dict:
    """The first `batches` (as the peers are measured), then as many more (the shards decompressed by
    then: the steady state, where only the per-batch work is left)."""
    loader = ShardLoader(shards, BATCH, seed=0, weights=weights)
    result = {}
    for key in ("tokens_per_s", "steady_tokens_per_s"):
        started, tokens, sources = time.perf_counter(), 0, []
        for _ in range(batches):
            batch = next(loader)
            tokens += batch["input_ids"].numel()
            sources.append(batch["source"].tolist())
        result[key] = tokens / (time.perf_counter() - started)
        result.setdefault("sources", sources)
    loader.close()
    return result


def largest_deviation(sources: list[list[int]], weights: list[float], window: int) -> float:
    """max over sources and windows of `window` consecutive batches of |rows - weight x rows in window|."""
    counts = np.array([[row.count(i) for i in range(len(weights))] for row in sources], dtype=np.float64)
    cumulative = np.vstack([np.zeros(len(weights)), np.cumsum(counts, axis=0)])
    in_window = cumulative[window:] - cumulative[:-window]
    share = np.array([float(Fraction(str(w)) / sum(Fraction(str(x)) for x in weights)) for w in weights])
    return float(np.abs(in_window - share * BATCH * window).max())


def peer_bins(folders: dict[str, Path], work: Path) -> None:
    """SOURCE.bin and all.bin for the peers: the same rows, each source's with its marker."""
    rows = {}
    for i, (name, folder) in enumerate(folders.items()):
        index = json.loads((folder / "index.json").read_text())
        path = work / f"{name}.bin"
        write_token_rows(folder, index, path)
        data = np.memmap(path, dtype=np.uint32, mode="r+").reshape(-1, index["seq_len"])
        data[:, -1] = MARKER + i
        data.flush()
        rows[name] = path
    with open(work / "all.bin", "wb") as out:
        for path in rows.values():
            out.write(path.read_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", default="out/sample/shards")
    parser.add_argument("--copies", default="96,48,16", help="shard copies per source: web,zh,code")
    parser.add_argument("--weights", default="0.5,0.3,0.2")
    parser.add_argument("--batches", type=int, default=6000)
    parser.add_argument("--work", default=".bench/mixture")
    parser.add_argument("--peers-python", default=str(PEERS_VENV / "bin" / "python"))
    args = parser.parse_args()
    work, copies = Path(args.work), [int(c) for c in args.copies.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    folders = {name: work / name for name in NAMES}
    for name, n in zip(NAMES, copies):
        replicate(Path(args.shards), folders[name], n)
    index = replicate(Path(args.shards), work / "all", sum(copies))
    peer_bins(folders, work)

    runs = {"tokenmill ShardLoader": {
        False: tokenmill_pass(str(work / "all"), args.batches, None),
        True: tokenmill_pass({n: str(f) for n, f in folders.items()}, args.batches, dict(zip(NAMES, weights)))}}
    ensure_peers_venv(args.peers_python)
    out = subprocess.run([args.peers_python, str(REPO / "benchmarks" / "mixture_peers.py"), "--work", str(work),
                          "--names", ",".join(NAMES), "--weights", args.weights, "--seq-len", str(index["seq_len"]),
                          "--batches", str(args.batches)], check=True, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            runs.setdefault(record["loader"], {})[record["mixture"]] = record

    rows = {name: json.loads((folders[name] / "index.json").read_text())["totals"]["rows"] for name in NAMES}
    print(f"{args.batches} batches [{BATCH}, {index['seq_len']}] int64 each; sources "
          + ", ".join(f"{n} {rows[n]} rows weight {w}" for n, w in zip(NAMES, weights)) + "\n")
    print("| loader | one source M tokens/s | mixture M tokens/s | mixture / one source | "
          + " | ".join(f"largest deviation, {w} batch{'es' if w > 1 else ''} (rows)" for w in WINDOWS) + " |")
    print("|---|---|---|---|" + "---|" * len(WINDOWS))
    for name, run in runs.items():
        one, mixed = run[False]["tokens_per_s"], run[True]["tokens_per_s"]
        deviations = [largest_deviation(run[True]["sources"], weights, w) for w in WINDOWS]
        print(f"| {name} | {one / 1e6:.1f} | {mixed / 1e6:.1f} | {mixed / one:.2f}x | "
              + " | ".join(f"{d:.2f} ({d / w:.2f} per batch)" for d, w in zip(deviations, WINDOWS)) + " |")
    steady = runs["tokenmill ShardLoader"]
    one, mixed = steady[False]["steady_tokens_per_s"], steady[True]["steady_tokens_per_s"]
    print(f"\nShardLoader, the next {args.batches} batches (shards decompressed): one source {one / 1e6:.1f}, "
          f"mixture {mixed / 1e6:.1f} M tokens/s ({mixed / one:.2f}x)")


if __name__ == "__main__":
    main()
