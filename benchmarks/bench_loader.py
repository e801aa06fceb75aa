"""Loader benchmark (issue 6), first part: the single-process ShardLoader against reading the same
shards with pyarrow alone and against random windows of an uncompressed NumPy memmap (Megatron's way).

    python -m benchmarks.bench_loader [--shards out/sample/shards] [--copies N] [--work .bench/loader]

The shards are copied `--copies` times (renamed, one index; by default as many as make 1 GB or more
of uncompressed tokens). Figures are tokens/s of int64 batches [8, seq_len] (memmap: [8, 2048]); the
files sit in the page cache after the copy, so "cold" means not yet decompressed, not read from SSD.
Still to add (next session): worker processes through the shared-memory cache, and
mosaicml-streaming and litdata on the same tokens.
"""

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from loaders import ShardLoader
from schemas.shards import shard_name

BATCH = 8
GIGABYTE = 10**9


def replicate(shards: Path, work: Path, copies: int) -> dict:
    index = json.loads((shards / "index.json").read_text())
    work.mkdir(parents=True, exist_ok=True)
    entries = []
    for copy in range(copies):
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


def pyarrow_pass(folder: Path, index: dict) -> tuple[float, np.ndarray]:
    started, parts = time.perf_counter(), []
    for entry in index["shards"]:
        with pa.memory_map(str(folder / entry["file"])) as source:
            parts.append(pa.ipc.open_file(source).read_all().column("tokens").combine_chunks().values.to_numpy())
    return time.perf_counter() - started, parts[0]


def loader_pass(folder: Path, index: dict) -> tuple[float, float, float]:
    """(cold tokens/s over one epoch, seconds to the first batch, warm tokens/s)."""
    started = time.perf_counter()
    loader = ShardLoader(str(folder), BATCH, seed=0)
    first, tokens = None, 0
    for _ in range(index["totals"]["rows"] // BATCH):
        tokens += next(loader)["input_ids"].numel()
        first = first or time.perf_counter() - started
    cold = tokens / (time.perf_counter() - started)
    started, tokens = time.perf_counter(), 0
    for _ in range(2000):
        tokens += next(loader)["input_ids"].numel()
    return cold, first, tokens / (time.perf_counter() - started)


def memmap_pass(work: Path, sample: np.ndarray, total_tokens: int) -> float:
    """Random [8, 2048] windows of one flat uint32 file of the same size, as int64 tensors."""
    import torch

    path = work / "tokens.bin"
    if not path.exists() or path.stat().st_size != total_tokens * 4:
        with open(path, "wb") as f:
            for _ in range(total_tokens // len(sample)):
                f.write(sample.astype(np.uint32).tobytes())
    data = np.memmap(path, dtype=np.uint32, mode="r")
    rng = np.random.default_rng(0)
    started, tokens = time.perf_counter(), 0
    for _ in range(20_000):
        starts = rng.integers(0, len(data) - 2049, BATCH)
        batch = torch.from_numpy(np.stack([data[s:s + 2048] for s in starts]).astype(np.int64))
        tokens += batch.numel()
    return tokens / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", default="out/sample/shards")
    parser.add_argument("--copies", type=int, help="default: enough for 1 GB of uint32 tokens")
    parser.add_argument("--work", default=".bench/loader")
    args = parser.parse_args()
    work = Path(args.work)
    tokens = json.loads((Path(args.shards) / "index.json").read_text())["totals"]["tokens"]
    copies = args.copies or -(-GIGABYTE // (4 * tokens))
    index = replicate(Path(args.shards), work / "shards", copies)
    total = index["totals"]["tokens"]
    seconds, sample = pyarrow_pass(work / "shards", index)
    cold, first, warm = loader_pass(work / "shards", index)
    memmap = memmap_pass(work, sample, total)
    print(f"{total / 1e6:.0f} M tokens ({total * 4 / 1e9:.2f} GB as uint32) in {len(index['shards'])} shards\n")
    print("| reader | M tokens/s | ratio |\n|---|---|---|")
    print(f"| pyarrow alone: read and decompress every shard | {total / seconds / 1e6:.1f} | 1.00x |")
    print(f"| ShardLoader, first pass (decompressing), [8, {index['seq_len']}] int64 | {cold / 1e6:.1f} | "
          f"{cold * seconds / total:.2f}x of pyarrow |")
    print(f"| ShardLoader, warm (decoded shards in the process) | {warm / 1e6:.1f} | {warm / memmap:.2f}x of memmap |")
    print(f"| NumPy memmap, random [8, 2048] windows, int64 | {memmap / 1e6:.1f} | 1.00x |")
    print(f"\nfirst batch after {first:.2f} s")


if __name__ == "__main__":
    main()
