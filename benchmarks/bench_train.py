"""Training speed: jobs/train.py for a few steps per model preset, then tokens/s, MFU and
data-wait % in steady state (the median over the steps after the first `--skip`).

    python -m benchmarks.bench_train --shards DIR [--models 125m,1b] [--steps 40] [--skip 10]
        [--global-batch-size 8] [--processes 1] [--work .bench/train] [-- extra train.py flags]

Meant for a GPU machine (one process per GPU); on CPU the tiny model shows the loop's overheads.
Prints a Markdown table with the device and the date.
"""

import argparse
import datetime
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(model: str, args, extra: list[str]) -> list[dict]:
    run_dir = Path(args.work) / model
    shutil.rmtree(run_dir, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc_per_node={args.processes}", str(REPO / "jobs" / "train.py"), "--shards", args.shards,
                    "--run-dir", str(run_dir), "--model", model, "--steps", str(args.steps), "--global-batch-size",
                    str(args.global_batch_size), "--checkpoint-every", str(10 * args.steps), "--warmup-steps", "100",
                    *extra], check=True, cwd=REPO)
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", required=True)
    parser.add_argument("--models", default="125m,1b")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--skip", type=int, default=10, help="warm-up steps left out of the medians")
    parser.add_argument("--global-batch-size", type=int, default=8)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--work", default=".bench/train")
    args, extra = parser.parse_known_args()
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    rows = []
    for model in args.models.split(","):
        steady = run(model, args, [e for e in extra if e != "--"])[args.skip:]
        mfu = [r["mfu"] for r in steady if r["mfu"] is not None]
        rows.append((model, statistics.median(r["tokens_per_s"] for r in steady),
                     statistics.median(mfu) if mfu else None, statistics.median(r["data_wait_pct"] for r in steady)))
    print(f"\n{datetime.date.today()}, {args.processes} x {device}, global batch {args.global_batch_size}, "
          f"medians of steps {args.skip + 1}-{args.steps}\n")
    print("| model | tokens/s | MFU | data wait |\n|---|---|---|---|")
    for model, tokens, mfu, wait in rows:
        print(f"| {model} | {tokens:,.0f} | {'n/a' if mfu is None else f'{100 * mfu:.1f}%'} | {wait:.2f}% |")


if __name__ == "__main__":
    main()
