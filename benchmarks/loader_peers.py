"""The loaders users would otherwise pick, on the same tokens: litdata (TokensLoader) and
mosaicml-streaming (StreamingDataset over MDS). Run by benchmarks/bench_loader.py in its own venv
(.bench/loader-venv: neither library is a tokenmill dependency); prints one JSON object per line.

    python benchmarks/loader_peers.py --tokens TOKENS.bin --seq-len 2048 --work DIR

TOKENS.bin holds the shards' rows as uint32, each padded to seq_len. Both are written zstd-compressed
(as tokenmill's shards are), read back in shuffled [8, seq_len] int64 batches with 0 and 2 DataLoader
workers. mosaicml-streaming imports torchvision, which does not load beside the CPU torch; a stub
module is put on the path (its token path does not use it).
"""

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

BATCH = 8


def stub_torchvision(work: Path) -> None:
    stub = work / "torchvision-stub" / "torchvision"
    (stub / "transforms").mkdir(parents=True, exist_ok=True)
    (stub / "__init__.py").write_text("from . import datasets, transforms\n")
    (stub / "datasets.py").write_text("class VisionDataset: pass\nclass CIFAR10: pass\n")
    (stub / "transforms" / "__init__.py").write_text("from . import functional\n")
    (stub / "transforms" / "functional.py").write_text("def to_tensor(x): raise NotImplementedError\n")
    sys.path.insert(0, str(stub.parent))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def rows_of(tokens: np.ndarray, seq_len: int, parts: int):
    rows = tokens.reshape(-1, seq_len)
    return np.array_split(np.arange(len(rows)), parts), rows


def litdata_rows(chunk, tokens_path: str, seq_len: int):
    import torch

    rows = np.memmap(tokens_path, dtype=np.uint32, mode="r").reshape(-1, seq_len)
    for i in chunk:
        yield torch.from_numpy(rows[i].astype(np.int32))  # litdata stores int32 (no uint32 tensors)


def prepare_litdata(tokens_path: Path, seq_len: int, out: Path) -> float:
    from functools import partial

    from litdata import TokensLoader, optimize

    if (out / "index.json").exists():
        return 0.0
    shutil.rmtree(out, ignore_errors=True)
    chunks = np.array_split(np.arange(tokens_path.stat().st_size // (4 * seq_len)), 16)
    started = time.perf_counter()
    optimize(fn=partial(litdata_rows, tokens_path=str(tokens_path), seq_len=seq_len),
             inputs=[c.tolist() for c in chunks],
             output_dir=str(out), chunk_size=seq_len * 8192, item_loader=TokensLoader(), compression="zstd",
             compression_level="chunk", num_workers=2, verbose=False, reorder_files=False)
    return time.perf_counter() - started


def prepare_mds(tokens_path: Path, seq_len: int, out: Path) -> float:
    from streaming import MDSWriter

    if (out / "index.json").exists():
        return 0.0
    shutil.rmtree(out, ignore_errors=True)
    rows = np.memmap(tokens_path, dtype=np.uint32, mode="r").reshape(-1, seq_len)
    started = time.perf_counter()
    with MDSWriter(out=str(out), columns={"tokens": f"ndarray:uint32:{seq_len}"}, compression="zstd",
                   size_limit=1 << 27) as writer:
        for row in rows:
            writer.write({"tokens": np.asarray(row)})
    return time.perf_counter() - started


def measure(batches, limit_tokens: int) -> dict:
    """Tokens/s of int64 batches until limit_tokens, and the seconds to the first batch."""
    started = time.perf_counter()
    first, tokens = None, 0
    for batch in batches:
        batch = batch.long() if hasattr(batch, "long") else batch
        tokens += batch.numel()
        first = first if first is not None else time.perf_counter() - started
        if tokens >= limit_tokens:
            break
    return {"tokens_per_s": tokens / (time.perf_counter() - started), "first_batch_s": first, "tokens": tokens}


def run_litdata(data: Path, seq_len: int, workers: int, cache: Path, limit: int) -> dict:
    from litdata import StreamingDataLoader, StreamingDataset, TokensLoader

    shutil.rmtree(cache, ignore_errors=True)
    dataset = StreamingDataset(input_dir=f"local:{data}", item_loader=TokensLoader(block_size=seq_len), shuffle=True,
                               seed=0, cache_dir=str(cache))
    loader = StreamingDataLoader(dataset, batch_size=BATCH, num_workers=workers, drop_last=True)
    result = measure(loader, limit)
    result["disk_bytes"] = folder_bytes(cache)
    return result


def run_mosaic(data: Path, workers: int, local: Path, limit: int) -> dict:
    import torch
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()
    shutil.rmtree(local, ignore_errors=True)
    shutil.copytree(data, local)  # mosaic decompresses next to the zstd shards in `local`
    before = folder_bytes(local)
    dataset = StreamingDataset(local=str(local), batch_size=BATCH, shuffle=True, shuffle_seed=0)
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, num_workers=workers, collate_fn=collate_int64,
                                         persistent_workers=False)
    result = measure(loader, limit)
    result["disk_bytes"] = folder_bytes(local) - before
    return result


def collate_int64(samples):
    import torch

    return torch.from_numpy(np.stack([s["tokens"] for s in samples]).astype(np.int64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--work", required=True)
    parser.add_argument("--limit-tokens", type=int, help="stop each pass after this many tokens (default: all)")
    args = parser.parse_args()
    work, tokens = Path(args.work), Path(args.tokens)
    work.mkdir(parents=True, exist_ok=True)
    stub_torchvision(work)
    limit = args.limit_tokens or tokens.stat().st_size // 4
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    seconds = prepare_litdata(tokens, args.seq_len, work / "litdata")
    print(json.dumps({"prepare": "litdata", "seconds": seconds}), flush=True)
    seconds = prepare_mds(tokens, args.seq_len, work / "mds")
    print(json.dumps({"prepare": "mosaicml-streaming", "seconds": seconds}), flush=True)
    for workers in (0, 2):
        result = run_litdata(work / "litdata", args.seq_len, workers, work / "litdata-cache", limit)
        print(json.dumps({"loader": "litdata", "workers": workers, **result}), flush=True)
        result = run_mosaic(work / "mds", workers, work / "mds-local", limit)
        print(json.dumps({"loader": "mosaicml-streaming", "workers": workers, **result}), flush=True)


if __name__ == "__main__":
    main()
