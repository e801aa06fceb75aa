"""The guarded loop under torchrun, two CPU processes (gloo): stretches of 1, 4, 16 and 64 batches of the
data order poisoned with random tokens, far apart, are each rolled back once, found by probing forward
and skipped, with no clean batch skipped and the run ending near an unpoisoned one; without probes, the
skips double (O(log B) rollbacks); a stretch right after an early checkpoint is blamed on the data; a resume
after the skips is bit-exact; an injected non-finite gradient
is not applied (and a resume after it is bit-exact); the start checks refuse a parameter no optimizer group
holds, a rank on another torch, one that loaded another libnccl and one started with other NCCL settings;
a second run on a folder is refused and a killed agent's workers do not outlive it. Faults are injected by
tests/trainer/fault_launcher.py."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.trainer.poisoned import poisoned_positions, records, summary, write_shards

pytestmark = pytest.mark.torchrun

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "tests" / "trainer" / "fault_launcher.py"  # jobs/train.py with faults injected
STEPS, BATCH, EVERY = 200, 4, 10
STRETCHES = [(29, 1), (60, 4), (100, 16), (140, 64)]  # (first global batch, batches): steps 30, 61, 101, 141 at first
POISONED = poisoned_positions(STRETCHES, BATCH)


def command(processes: int, shards: Path, run_dir: Path, *extra: str, steps: int = STEPS,
            faults: tuple[str, ...] = ()) -> list[str]:
    """jobs/train.py under torchrun; with faults, fault_launcher.py (the same run, those faults injected)."""
    script = [str(LAUNCHER), *faults] if faults else [str(REPO / "jobs" / "train.py")]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
            *script, "--shards", str(shards), "--run-dir", str(run_dir), "--model", "tiny",
            "--steps", str(steps), "--global-batch-size", str(BATCH), "--warmup-steps", "4", "--lr", "3e-3",
            "--checkpoint-every", str(EVERY), "--keep-checkpoints", "3", "--heldout.every", "1000",
            "--heldout.rows", "64", *extra]


def run(processes, shards, run_dir, *extra, faults=(), ok=True, steps=STEPS) -> str:
    done = subprocess.run(command(processes, shards, run_dir, *extra, steps=steps, faults=faults), cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert (done.returncode == 0) == ok, output[-3000:]
    return output


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """(clean shards, the same with the rows of STRETCHES replaced by random tokens)."""
    clean, poisoned = tmp_path_factory.mktemp("clean"), tmp_path_factory.mktemp("poisoned")
    write_shards(clean, [], BATCH)
    write_shards(poisoned, STRETCHES, BATCH)
    return clean, poisoned


@pytest.fixture(scope="module")
def reference(shards, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("reference")
    run(2, shards[0], run_dir)
    return run_dir


@pytest.fixture(scope="module")
def guarded(shards, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("guarded")
    return run_dir, run(2, shards[1], run_dir)


def test_stretches_of_1_4_16_and_64_batches_cost_a_rollback_each_and_skip_no_clean_batch(reference, guarded):
    run_dir, output = guarded
    steps, events, _ = records(run_dir)
    found = summary(run_dir, STRETCHES, BATCH)
    assert found["poisoned_skipped"] == found["poisoned_batches"] == 85 and found["trained_on_poison"] == 0
    assert found["rollbacks"] == len(STRETCHES) and found["causes"] == ["data"], found
    assert found["clean_skipped"] <= len(STRETCHES), found  # a probe may judge a clean batch bad, rarely
    rollbacks = [e for e in events if e["event"] == "rollback"]
    for event, (first, length) in zip(rollbacks, STRETCHES):  # every decision in metrics.jsonl
        assert event["skipped"][0] == first * BATCH and event["skipped"][1] >= (first + length) * BATCH, event
        assert event["probe_loss"] > event["baseline"] + 0.5 and event["checkpoint"] == f"step-{event['back_to']:07d}"
        assert event["weights_loss"] < event["loss"] - 0.5  # the weights were sound: their last batch scored low
        assert len(event["probed"]) <= 2 * np.ceil(np.log2(length + 1)) + 1, event  # O(log B) forward passes
    assert rollbacks[0]["at_step"] == 30 and rollbacks[0]["back_to"] == 20 and "cause data" in output
    assert sorted(steps) == list(range(1, STEPS + 1)) and all(r["applied"] for r in steps.values())
    clean, _, _ = records(reference)
    assert all(steps[s]["loss"] == clean[s]["loss"] for s in range(1, 21))  # the same run up to the checkpoint
    end, clean_end = summary(reference, [], BATCH)["end_heldout_loss"], found["end_heldout_loss"]
    assert abs(end - clean_end) < 0.06, (end, clean_end)


def test_without_probes_a_stretch_of_b_batches_costs_log2_b_rollbacks(shards, tmp_path):
    run_dir = tmp_path / "doubling"
    run(2, shards[1], run_dir, "--guard.probe-batches", "0", "--guard.max-rollbacks", "20", steps=100)
    steps, events, _ = records(run_dir)
    rollbacks = [e for e in events if e["event"] == "rollback"]
    found = summary(run_dir, STRETCHES[:3], BATCH)
    assert found["poisoned_skipped"] == 21 and found["trained_on_poison"] == 0 and max(steps) == 100
    widths = [(e["skipped"][1] - e["skipped"][0]) // BATCH for e in rollbacks]
    assert widths == [1, 1, 2, 4, 1, 2, 4, 8, 16], widths  # 1 + 3 + 5 rollbacks: ceil(log2(B + 1)) each
    assert found["clean_skipped"] == 0 + 3 + 15  # past the end of the last widening


def test_a_stretch_right_after_an_early_checkpoint_is_blamed_on_the_data_not_trained_on(tmp_path):
    """Found by trying: at lr 2e-3 the model of step 10 is barely trained, and random tokens score on it much
    as text does (7.03 against 6.62): the spike at step 17 was blamed on the optimizer, replayed at a lower
    rate, and a poisoned batch trained on (5 rollbacks, held-out loss 6.34 against 6.00). The weights that
    spiked had scored their own last batch normally: the data, whose stretch those weights tell best."""
    stretch = [(16, 4)]
    write_shards(tmp_path / "shards", stretch, BATCH)
    run(2, tmp_path / "shards", tmp_path / "run", "--lr", "2e-3", steps=40)
    found = summary(tmp_path / "run", stretch, BATCH)
    assert found["causes"] == ["data"] and found["trained_on_poison"] == 0 and found["poisoned_skipped"] == 4, found
    # the stretch found on the weights that spiked (sound), not on the restored ones: one rollback, nothing clean
    assert found["rollbacks"] == 1 and found["clean_skipped"] == 0 and found["end_step"] == 40, found
    rollback = next(e for e in records(tmp_path / "run")[1] if e["event"] == "rollback")
    assert rollback["probed_on"] == "the weights that spiked" and rollback["skipped"] == [64, 80], rollback


def test_a_resume_after_the_skips_is_bit_exact(shards, guarded, tmp_path):
    run_dir, _ = guarded
    expected, _, _ = records(run_dir)
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    subprocess.run(["cp", "-r", str(run_dir / "checkpoints" / "step-0000190"), str(resumed / "checkpoints")],
                   check=True)
    run(2, shards[1], resumed, "--resume")
    steps, _, _ = records(resumed)
    assert sorted(steps) == list(range(191, STEPS + 1))
    for step in steps:
        assert all(steps[step][k] == expected[step][k] for k in ("loss", "grad_norm", "lr", "token_sum", "position"))


def _model(checkpoint: Path, tmp_path: Path) -> dict:
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    out = tmp_path / f"{checkpoint.name}.pt"
    dcp_to_torch_save(checkpoint, out)
    return {k: v for k, v in torch.load(out, weights_only=False)["model"].items()}


def test_a_non_finite_gradient_is_not_applied_and_a_resume_after_it_is_bit_exact(shards, tmp_path):
    clean, _ = shards
    run_dir = tmp_path / "nonfinite"
    run(2, clean, run_dir, "--checkpoint-every", "1", "--keep-checkpoints", "10", steps=7,
        faults=("--nonfinite-grad", "6:1"))
    steps, events, _ = records(run_dir)
    assert [(e["event"], e["at_step"]) for e in events] == [("nonfinite", 6)] and not steps[6]["applied"]
    # the infinite norm is null in metrics.jsonl (strict JSON: schemas/strict_json.py)
    assert all(steps[s]["applied"] for s in (1, 2, 3, 4, 5, 7)) and steps[6]["grad_norm"] is None
    before, at, after = (_model(run_dir / "checkpoints" / f"step-000000{s}", tmp_path) for s in (5, 6, 7))
    assert all((before[k] == at[k]).all() for k in before)  # step 6 changed nothing
    assert any((at[k] != after[k]).any() for k in at)  # step 7 did
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    subprocess.run(["cp", "-r", str(run_dir / "checkpoints" / "step-0000006"), str(resumed / "checkpoints")],
                   check=True)
    run(2, clean, resumed, "--resume", "--checkpoint-every", "1", steps=7)
    again, _, _ = records(resumed)
    assert all(again[7][k] == steps[7][k] for k in ("loss", "grad_norm", "lr", "token_sum"))


@pytest.mark.parametrize("faults, extra, messages", [
    (("--leave-out", "norm.weight", "--torch-version", "1:0.0.0", "--nccl-library",
      "1:/opt/cu13/nvidia/nccl/lib/libnccl.so.2", "--nccl-env", "1:NCCL_IB_HCA=mlx5_1"), (),
     ("rank 0: parameter norm.weight is in 0 optimizer groups", "torch 0.0.0 differs from rank 0's",
      "rank 1 (", "NCCL library /opt/cu13/nvidia/nccl/lib/libnccl.so.2 (2.99.9) differs from rank 0's none (none)",
      "NCCL_IB_HCA=mlx5_1")),
    ((), ("--global-batch-size", "3"), ("global_batch_size 3 is not a multiple of the 2 processes",)),
])
def test_the_start_checks_refuse_what_cannot_train_together(shards, tmp_path, faults, extra, messages):
    clean, _ = shards
    output = run(2, clean, tmp_path / "refused", *extra, faults=faults, ok=False, steps=8)
    line = next(line for line in output.splitlines() if line.startswith("jobs.train: error:"))
    assert all(message in line for message in messages), line  # one line says all of it
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
        while not (run_dir / "metrics.jsonl").is_file() or '"step"' not in (run_dir / "metrics.jsonl").read_text():
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
    output = run(2, poisoned, run_dir, "--guard.max-rollbacks", "0", ok=False, steps=40)
    assert "jobs.train: error: 1 loss spikes rolled the run back within 1000 steps (at steps 30)" in output
    steps, events, _ = records(run_dir)
    assert max(steps) == 29 and events[-1]["event"] == "stopped"


def test_batches_with_no_token_to_predict_are_passed_over_and_blame_no_clean_batch(tmp_path):
    # rows of one-token documents predict nothing: a loss of 0 among the guard's recent losses made the next
    # clean batch a "spike", blamed on the optimizer, then on the data, until the run stopped (exit 3)
    stretch = [(30, 5)]
    write_shards(tmp_path / "shards", stretch, BATCH, one_token_documents=True)
    run_dir = tmp_path / "run"
    run(2, tmp_path / "shards", run_dir, steps=60)
    steps, events, _ = records(run_dir)
    empty = [e["at_step"] for e in events if e["event"] == "empty_batch"]
    assert empty == list(range(31, 36)) and not any(e["event"] in ("rollback", "spike") for e in events), events
    assert sorted(steps) == list(range(1, 61)) and not any(steps[s]["applied"] for s in empty)
