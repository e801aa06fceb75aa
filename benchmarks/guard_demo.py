"""The README's example plot: a guarded run over shards of the sample with a stretch of the data order
poisoned by random tokens, and held-out shards, on two CPU processes; its curves by `python -m jobs.plot`.

    python -m benchmarks.guard_demo [--output docs/images/guarded-run.png] [--steps 60]
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from loaders.order import GlobalOrder, OrderConfig
from prep.tokenizer.encode import TokenizerFile
from tests.shard_fixtures import write_text_shards

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "images" / "guarded-run.png")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--poisoned-step", type=int, default=40)
    args = parser.parse_args()
    batch = 4
    with tempfile.TemporaryDirectory() as tmp:
        shards, run_dir = Path(tmp) / "shards", Path(tmp) / "guarded-run"
        rows = [e["rows"] for e in write_text_shards(Path(tmp) / "probe", seq_len=256)["shards"]]
        poisoned = range((args.poisoned_step - 1) * batch, (args.poisoned_step + 1) * batch)  # two batches
        shard, row = GlobalOrder(rows, OrderConfig(seed=0)).locate_many(poisoned)
        rng = np.random.default_rng(0)

        def poison(tokens, cu, bounds):
            for s, r in zip(shard.tolist(), row.tolist()):
                g = bounds[s] + r
                tokens[g] = rng.integers(19, 1024, len(tokens[g])).astype(np.uint32)
                cu[g] = np.array([0, len(tokens[g])], np.int32)

        write_text_shards(shards, seq_len=256, edit_rows=poison)
        write_text_shards(shards / "heldout", seq_len=256, files=("debian-handbook.en",),
                          tokenizer_file=TokenizerFile.read(str(shards / "tokenizer.json")))
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                        str(REPO / "jobs" / "train.py"), "--shards", str(shards), "--run-dir", str(run_dir),
                        "--steps", str(args.steps), "--global-batch-size", str(batch), "--warmup-steps", "4",
                        "--lr", "3e-3", "--checkpoint-every", "10", "--heldout.every", "10", "--heldout.rows", "32"],
                       check=True, cwd=REPO)
        subprocess.run([sys.executable, "-m", "jobs.plot", str(run_dir), "--output", str(args.output)], check=True,
                       cwd=REPO)


if __name__ == "__main__":
    main()
