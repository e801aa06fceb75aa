"""The guarded loop under torchrun, two CPU processes (gloo): a stretch of the data order poisoned with
random tokens is detected, rolled back and skipped, and the run ends near an unpoisoned run; a resume
after the skip is bit-exact; an injected non-finite gradient is not applied; the start checks refuse a
parameter no optimizer group holds and a rank on another torch; a second run on a folder is refused and
a killed agent's workers do not outlive it. Faults are injected by tests/trainer/fault_launcher.py."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from loaders.order import GlobalOrder, OrderConfig
from tests.shard_fixtures import write_text_shards

pytestmark = pytest.mark.torchrun

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "tests" / "trainer" / "fault_launcher.py"  # jobs/train.py with faults injected
STEPS, BATCH, EVERY = 40, 4, 8
POISONED_STEPS = (30, 31)  # their batches are random tokens
POISONED = range((POISONED_STEPS[0] - 1) * BATCH, POISONED_STEPS[-1] * BATCH)  # their global positions


def command(processes: int, shards: Path, run_dir: Path, *extra: str, steps: int = STEPS,
            faults: tuple[str, ...] = ()) -> list[str]:
    """jobs/train.py under torchrun; with faults, fault_launcher.py (the same run, those faults injected)."""
    script = [str(LAUNCHER), *faults] if faults else [str(REPO / "jobs" / "train.py")]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
            *script, "--shards", str(shards), "--run-dir", str(run_dir), "--model", "tiny",
            "--steps", str(steps), "--global-batch-size", str(BATCH), "--warmup-steps", "4", "--lr", "3e-3",
            "--checkpoint-every", str(EVERY), "--keep-checkpoints", "10", *extra]


def run(processes, shards, run_dir, *extra, faults=(), ok=True, steps=STEPS) -> str:
    done = subprocess.run(command(processes, shards, run_dir, *extra, steps=steps, faults=faults), cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert (done.returncode == 0) == ok, output[-3000:]
    return output


def records(run_dir: Path) -> tuple[dict[int, dict], list[dict]]:
    """(each step's last record, the guard's events)."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r for r in lines if "step" in r}, [r for r in lines if "event" in r]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """(clean shards, the same with the rows at POISONED replaced by random tokens)."""
    clean = tmp_path_factory.mktemp("clean")
    index = write_text_shards(clean, seq_len=256)
    rows = [entry["rows"] for entry in index["shards"]]
    shard, row = GlobalOrder(rows, OrderConfig(seed=0)).locate_many(POISONED)
    rng = np.random.default_rng(0)

    def poison(tokens, cu, bounds):
        for s, r in zip(shard.tolist(), row.tolist()):
            g = bounds[s] + r
            tokens[g] = rng.integers(19, index["vocab_size"], len(tokens[g])).astype(np.uint32)
            cu[g] = np.array([0, len(tokens[g])], np.int32)

    poisoned = tmp_path_factory.mktemp("poisoned")
    write_text_shards(poisoned, seq_len=256, edit_rows=poison)
    return clean, poisoned


@pytest.fixture(scope="module")
def guarded(shards, tmp_path_factory):
    clean, poisoned = shards
    reference, run_dir = tmp_path_factory.mktemp("reference"), tmp_path_factory.mktemp("guarded")
    run(2, clean, reference)
    output = run(2, poisoned, run_dir)
    return reference, run_dir, output


def test_a_poisoned_stretch_is_rolled_back_skipped_and_the_run_ends_near_a_clean_one(guarded):
    reference, run_dir, output = guarded
    steps, events = records(run_dir)
    rollbacks = [e for e in events if e["event"] == "rollback"]
    assert rollbacks and rollbacks[0]["at_step"] == POISONED_STEPS[0] and rollbacks[0]["back_to"] == 24
    skipped = [range(*e["skipped"]) for e in rollbacks]
    assert all(any(p in stretch for stretch in skipped) for p in POISONED)  # every poisoned batch skipped
    assert sorted(steps) == list(range(1, STEPS + 1)) and all(r["applied"] for r in steps.values())
    assert not any(r["position"] in POISONED for r in steps.values())  # none of them trained on
    clean, _ = records(reference)
    assert all(steps[s]["loss"] == clean[s]["loss"] for s in range(1, 25))  # the same run up to the checkpoint
    end, clean_end = (np.mean([r[s]["loss"] for s in range(STEPS - 3, STEPS + 1)]) for r in (steps, clean))
    assert abs(end - clean_end) < 0.25, (end, clean_end)
    assert "loss spike at step 30" in output
    guard = json.loads((run_dir / "loader-rank0.json").read_text())["guard"]
    assert guard["spikes"] == len(rollbacks) and guard["rollbacks"][0] == POISONED_STEPS[0]


def test_a_resume_after_the_skip_is_bit_exact(shards, guarded, tmp_path):
    _, poisoned = shards
    _, run_dir, _ = guarded
    expected, _ = records(run_dir)
    for processes in (2, 1):
        resumed = tmp_path / f"resumed-{processes}"
        (resumed / "checkpoints").mkdir(parents=True)
        os.system(f"cp -r {run_dir}/checkpoints/step-0000032 {resumed}/checkpoints/")
        run(processes, poisoned, resumed, "--resume")
        steps, _ = records(resumed)
        assert sorted(steps) == list(range(33, STEPS + 1))
        keys = ("loss", "grad_norm", "lr", "token_sum", "position") if processes == 2 else ("token_sum", "position")
        for step in range(33, STEPS + 1):  # at another world size, the same data
            assert all(steps[step][k] == expected[step][k] for k in keys), (processes, step)


def _model(checkpoint: Path, tmp_path: Path) -> dict:
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    out = tmp_path / f"{checkpoint.name}.pt"
    dcp_to_torch_save(checkpoint, out)
    return {k: v for k, v in torch.load(out, weights_only=False)["model"].items()}


def test_a_non_finite_gradient_is_not_applied(shards, tmp_path):
    clean, _ = shards
    run_dir = tmp_path / "nonfinite"
    run(2, clean, run_dir, "--checkpoint-every", "1", steps=7, faults=("--nonfinite-grad", "6:1"))
    steps, events = records(run_dir)
    assert [(e["event"], e["at_step"]) for e in events] == [("nonfinite", 6)] and not steps[6]["applied"]
    assert all(steps[s]["applied"] for s in (1, 2, 3, 4, 5, 7)) and np.isinf(steps[6]["grad_norm"])
    before, at, after = (_model(run_dir / "checkpoints" / f"step-000000{s}", tmp_path) for s in (5, 6, 7))
    assert all((before[k] == at[k]).all() for k in before)  # step 6 changed nothing
    assert any((at[k] != after[k]).any() for k in at)  # step 7 did


@pytest.mark.parametrize("faults, extra, messages", [
    (("--leave-out", "norm.weight", "--torch-version", "1:0.0.0"), (),
     ("rank 0: parameter norm.weight is in 0 optimizer groups", "rank 1: torch 0.0.0 differs from rank 0's")),
    ((), ("--global-batch-size", "3"), ("global_batch_size 3 is not a multiple of the 2 processes",)),
])
def test_the_start_checks_refuse_what_cannot_train_together(shards, tmp_path, faults, extra, messages):
    clean, _ = shards
    output = run(2, clean, tmp_path / "refused", *extra, faults=faults, ok=False, steps=8)
    line = next(line for line in output.splitlines() if line.startswith("jobs.train: error:"))
    assert all(message in line for message in messages)  # one line says all of it
    assert not (tmp_path / "refused" / "metrics.jsonl").exists()


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_second_run_on_the_folder_is_refused_and_a_killed_agents_workers_die(shards, tmp_path):
    clean, _ = shards
    run_dir = tmp_path / "held"
    agent = subprocess.Popen(command(2, clean, run_dir, steps=100000), cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / "metrics.jsonl").is_file() or not (run_dir / "metrics.jsonl").read_text():
            assert agent.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        output = run(2, clean, run_dir, ok=False, steps=8)
        assert "is in use by another run (pid" in output
        workers = _children(agent.pid)
        assert len(workers) == 2 and all(_alive(w) for w in workers)
        agent.send_signal(signal.SIGKILL)  # the agent alone: its workers are in sessions of their own
        agent.wait()
        deadline = time.monotonic() + 30
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers)
        run(2, clean, run_dir, "--resume", steps=EVERY)  # the folder is free again
    finally:
        if agent.poll() is None:
            agent.kill()


def test_more_rollbacks_than_allowed_stop_the_run_with_one_line(shards, tmp_path):
    _, poisoned = shards
    run_dir = tmp_path / "stopped"
    output = run(2, poisoned, run_dir, "--guard.max-rollbacks", "0", ok=False)
    assert "jobs.train: error: 1 loss spikes rolled the run back within 1000 steps (at steps 30)" in output
    steps, events = records(run_dir)
    assert max(steps) == POISONED_STEPS[0] - 1 and events[-1]["event"] == "stopped"
