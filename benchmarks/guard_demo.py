"""The guard passing poisoned data: a guarded run over shards of the sample with a long stretch of the data
order replaced by random tokens, and held-out shards, on two CPU processes; its rollbacks printed and its
curves drawn by `python -m jobs.plot` (the README's example plot).

    python -m benchmarks.guard_demo [--output docs/images/guarded-run.png] [--steps 100] [--stretch 40:24]
    python -m benchmarks.guard_demo --measure     # stretches of 1, 4, 16, 64 batches and two far apart

--measure runs each poisoned data order twice (the guard as it is, and without probes: skips doubling on
a spike right after one) and once unpoisoned, and prints per run the rollbacks, the forward passes that
probed the data, the poisoned and clean batches skipped, and the end losses against the unpoisoned run's.
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.trainer.poisoned import summary, write_shards

REPO = Path(__file__).resolve().parents[1]
BATCH = 4
MEASURED = {"1": [(60, 1)], "4": [(60, 4)], "16": [(60, 16)], "64": [(60, 64)], "8+8 far apart": [(40, 8), (130, 8)]}
MODES = {"probes": (), "doubling": ("--guard.probe-batches", "0")}


def train(shards: Path, run_dir: Path, steps: int, *extra: str) -> None:
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(REPO / "jobs" / "train.py"), "--shards", str(shards), "--run-dir", str(run_dir),
                           "--steps", str(steps), "--global-batch-size", str(BATCH), "--warmup-steps", "4", "--lr",
                           "3e-3", "--checkpoint-every", "10", "--heldout.every", "1000", "--heldout.rows", "64",
                           "--guard.max-rollbacks", "20", *extra], cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the run in {run_dir} failed:\n{(done.stdout + done.stderr)[-3000:]}")


def measure(steps: int, tmp: Path) -> None:
    clean = tmp / "clean"
    write_shards(clean, [], BATCH)
    train(clean, tmp / "clean-run", steps)
    reference = summary(tmp / "clean-run", [], BATCH)
    print(f"unpoisoned: held-out loss {reference['end_heldout_loss']:.4f}, train loss (last 10 steps) "
          f"{reference['end_train_loss']:.4f} at step {steps}\n")
    print("| stretch (batches) | guard | rollbacks | forward probes | poisoned skipped | clean skipped | "
          "held-out loss (Δ) | train loss, last 10 (Δ) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, stretches in MEASURED.items():
        shards = tmp / f"poisoned-{len(stretches)}-{stretches[0][1]}"
        write_shards(shards, stretches, BATCH)
        for mode, extra in MODES.items():
            run_dir = tmp / f"{shards.name}-{mode}"
            train(shards, run_dir, steps, *extra)
            found = summary(run_dir, stretches, BATCH)
            held, loss = found["end_heldout_loss"], found["end_train_loss"]
            print(f"| {name} | {mode} | {found['rollbacks']} | {found['probes']} | {found['poisoned_skipped']} of "
                  f"{found['poisoned_batches']} | {found['clean_skipped']} | {held:.4f} "
                  f"({held - reference['end_heldout_loss']:+.4f}) | {loss:.4f} "
                  f"({loss - reference['end_train_loss']:+.4f}) |", flush=True)


def demo(steps: int, stretch: tuple[int, int], output: Path, tmp: Path) -> None:
    shards, run_dir = tmp / "shards", tmp / "guarded-run"
    write_shards(shards, [stretch], BATCH)
    train(shards, run_dir, steps, "--heldout.every", "10")
    found = summary(run_dir, [stretch], BATCH)
    print(f"{stretch[1]} poisoned batches from batch {stretch[0]}: {found['rollbacks']} rollback(s), "
          f"{found['probes']} forward probes, {found['poisoned_skipped']} poisoned and {found['clean_skipped']} clean "
          f"batches skipped, none trained on ({found['trained_on_poison']}); held-out loss at the end "
          f"{found['end_heldout_loss']:.4f}")
    subprocess.run([sys.executable, "-m", "jobs.plot", str(run_dir), "--output", str(output)], check=True, cwd=REPO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "images" / "guarded-run.png")
    parser.add_argument("--steps", type=int, default=None, help="default 100 (150 with --measure)")
    parser.add_argument("--stretch", default="40:24", help="FIRST_BATCH:BATCHES poisoned")
    parser.add_argument("--measure", action="store_true", help="the table of stretches of 1, 4, 16 and 64 batches")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.measure:
            measure(args.steps or 150, Path(tmp))
        else:
            first, length = (int(x) for x in args.stretch.split(":"))
            demo(args.steps or 100, (first, length), args.output, Path(tmp))


if __name__ == "__main__":
    main()
