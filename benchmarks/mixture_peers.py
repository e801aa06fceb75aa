"""Mixtures in the loaders users would otherwise pick: mosaicml-streaming (`Stream(proportion=...)`)
and litdata (`CombinedStreamingDataset(weights=...)`), on the same rows as bench_mixture.py. Run in
the peers' venv (see loader_peers.py); prints one JSON object per line: per run its tokens/s and the
source of every row of every batch.

    python benchmarks/mixture_peers.py --work DIR --seq-len 4096 --weights 0.5,0.3,0.2 --batches 1500

DIR/SOURCE.bin for each source and DIR/all.bin (every source's rows, one source for comparison):
uint32 rows of seq_len whose last token is MARKER + the source's index, so that a row's source can be
told from its tokens (the peers' batches carry nothing else).
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loader_peers import collate_int64, prepare_litdata, prepare_mds, stub_torchvision  # noqa: E402

BATCH = 8
MARKER = 1 << 30


def measure(batches, count: int) -> dict:
    """tokens/s over `count` int64 batches, and each row's source (from its marker; -1 for none)."""
    started, tokens, sources = time.perf_counter(), 0, []
    for i, batch in enumerate(batches):
        batch = batch.long()
        tokens += batch.numel()
        sources.append([int(t) - MARKER if t >= MARKER else -1 for t in batch[:, -1].tolist()])
        if i + 1 == count:
            break
    return {"tokens_per_s": tokens / (time.perf_counter() - started), "sources": sources}


def run_mosaic(work: Path, names: list[str], weights: list[float], count: int) -> dict:
    import torch
    from streaming import Stream, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()
    if names == ["all"]:
        dataset = StreamingDataset(local=str(work / "mds-all"), batch_size=BATCH, shuffle=True, shuffle_seed=0)
    else:
        streams = [Stream(local=str(work / f"mds-{name}"), proportion=weight) for name, weight in zip(names, weights)]
        dataset = StreamingDataset(streams=streams, batch_size=BATCH, shuffle=True, shuffle_seed=0)
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, num_workers=0, collate_fn=collate_int64)
    return measure(loader, count)


def run_litdata(work: Path, names: list[str], weights: list[float], seq_len: int, count: int) -> dict:
    from litdata import CombinedStreamingDataset, StreamingDataLoader, StreamingDataset, TokensLoader

    def dataset(name):
        cache = work / f"litdata-cache-{name}"
        shutil.rmtree(cache, ignore_errors=True)
        return StreamingDataset(input_dir=f"local:{work / f'litdata-{name}'}", cache_dir=str(cache), shuffle=True,
                                seed=0, item_loader=TokensLoader(block_size=seq_len))

    if names == ["all"]:
        combined = dataset("all")
    else:
        combined = CombinedStreamingDataset([dataset(name) for name in names], weights=weights, seed=0,
                                            iterate_over_all=False)
    return measure(StreamingDataLoader(combined, batch_size=BATCH, num_workers=0, drop_last=True), count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--names", default="web,zh,code")
    parser.add_argument("--weights", default="0.5,0.3,0.2")
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--batches", type=int, default=1500)
    args = parser.parse_args()
    work = Path(args.work)
    stub_torchvision(work)
    names, weights = args.names.split(","), [float(w) for w in args.weights.split(",")]
    for name in [*names, "all"]:
        prepare_litdata(work / f"{name}.bin", args.seq_len, work / f"litdata-{name}")
        prepare_mds(work / f"{name}.bin", args.seq_len, work / f"mds-{name}")
    for label, run in (("mosaicml-streaming", lambda n: run_mosaic(work, n, weights, args.batches)),
                       ("litdata", lambda n: run_litdata(work, n, weights, args.seq_len, args.batches))):
        for sources in (["all"], names):
            result = run(sources)
            print(json.dumps({"loader": label, "mixture": sources != ["all"], **result}), flush=True)


if __name__ == "__main__":
    main()
