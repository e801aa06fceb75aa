"""`make gpu-check`: what only a CUDA device can check, in one script, one table, under 8 minutes.

    python -m benchmarks.gpu_check [--steps 30] [--work .bench/gpu-check]

1. The CUDA tests: flex attention against dense attention, the loader's device ring (L1) against its
   CPU batches (pytest, the tests that skip without a GPU).
2. The device ring: batches/s and the first batch's latency of ShardLoader(device="cuda") against the
   same loader on the CPU, on shards of the sample.
3. bench_train for 125m and 1b on one device: tokens/s, MFU and data wait (medians after warm-up).
Exit code 2 without a CUDA device.
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cuda_tests() -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "tests/loaders/test_shard_loader.py",
                           "tests/trainer/test_model.py", "-k", "gpu_ring or flex"], cwd=REPO, capture_output=True,
                          text=True)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
    return ("CUDA tests (flex attention, device ring)", ("passed: " if done.returncode == 0 else "FAILED: ") + last)


def device_ring(shards: Path, batches: int = 200) -> list[tuple[str, str]]:
    import torch

    from loaders import ShardLoader

    rows = []
    for device in ("cpu", "cuda"):
        with ShardLoader(str(shards), 8, seed=0, device=device, prefetch_batches=4) as loader:
            started = time.perf_counter()
            first = next(loader)
            if device == "cuda":
                torch.cuda.synchronize()
            latency = time.perf_counter() - started
            started = time.perf_counter()
            for _ in range(batches):
                batch = next(loader)
            if device == "cuda":
                torch.cuda.synchronize()
            rate = batches / (time.perf_counter() - started)
            assert batch["input_ids"].device.type == device and first["input_ids"].shape[0] == 8
        rows.append((f"loader batches of 8 x {loader.seq_len} to {device}",
                     f"{rate:,.0f} batches/s, first batch in {latency * 1000:.0f} ms"))
    return rows


def train(shards: Path, work: Path, steps: int) -> list[tuple[str, str]]:
    import json

    rows = []
    for model in ("125m", "1b"):
        run_dir = work / model
        subprocess.run(["rm", "-rf", str(run_dir)], check=True)
        done = subprocess.run([sys.executable, str(REPO / "jobs" / "train.py"), "--shards", str(shards), "--run-dir",
                               str(run_dir), "--model", model, "--steps", str(steps), "--global-batch-size", "8",
                               "--warmup-steps", "5", "--checkpoint-every", str(10 * steps), "--heldout.every", "0"],
                              cwd=REPO, capture_output=True, text=True)
        if done.returncode:
            rows.append((f"train {model}", f"FAILED: {done.stderr.strip().splitlines()[-1][:200]}"))
            continue
        records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        steady = [r for r in records if "step" in r][steps // 3:]
        mfu = statistics.median(r["mfu"] for r in steady) if steady[0]["mfu"] is not None else None
        rows.append((f"train {model}, batch 8 x {2048}",
                     f"{statistics.median(r['tokens_per_s'] for r in steady):,.0f} tokens/s, MFU "
                     f"{'n/a' if mfu is None else f'{100 * mfu:.1f}%'}, data wait "
                     f"{statistics.median(r['data_wait_pct'] for r in steady):.2f}%"))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "gpu-check")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu-check: error: no CUDA device here (run it where one is)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    from tests.shard_fixtures import write_text_shards

    started = time.time()
    shards = args.work / "shards"
    if not (shards / "index.json").is_file():
        write_text_shards(shards, seq_len=2048, vocab_size=4096)
    rows = [cuda_tests(), *device_ring(shards), *train(shards, args.work, args.steps)]
    print(f"\n{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{time.time() - started:.0f} s\n")
    print("| check | result |\n|---|---|")
    for check, result in rows:
        print(f"| {check} | {result} |")
    return 1 if any("FAILED" in result for _, result in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
