"""An optimizer instability under torchrun, two CPU processes (gloo): one optimizer step at 1000x the learning
rate (injected by tests/trainer/fault_launcher.py) makes the next loss spike; the rollback's newest checkpoint
was damaged after it was saved, so it falls back to the one before (moved aside, named); the spiking batch on
the restored weights is normal, so the cause is the optimizer: no data skipped, the steps replayed at a
quarter of the learning rate, then ramped back; the run ends, and a resume from a checkpoint saved while the
rate was lowered is bit-exact."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shard_fixtures import write_text_shards
from trainer.config import TrainConfig, learning_rate

pytestmark = pytest.mark.torchrun

REPO = Path(__file__).resolve().parents[2]
STEPS, BLOWN, FACTOR, CALM, RAMP = 40, 25, 0.25, 5, 5
SETTINGS = ("--steps", str(STEPS), "--global-batch-size", "4", "--warmup-steps", "4", "--lr", "3e-3",
            "--checkpoint-every", "10", "--keep-checkpoints", "5", "--heldout.every", "0",
            "--guard.calm-lr-factor", str(FACTOR), "--guard.calm-steps", str(CALM), "--guard.calm-ramp-steps",
            str(RAMP))


def train(shards: Path, run_dir: Path, *extra: str, faults: tuple[str, ...] = ()) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(REPO / "tests" / "trainer" / "fault_launcher.py"), *faults, "--shards", str(shards), "--run-dir",
         str(run_dir), *SETTINGS, *extra], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done.stdout + done.stderr


def lines(run_dir: Path) -> tuple[dict[int, dict], list[dict]]:
    found = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r for r in found if "step" in r}, [r for r in found if "event" in r]


@pytest.fixture(scope="module")
def repaired(tmp_path_factory):
    shards = tmp_path_factory.mktemp("shards")
    write_text_shards(shards, seq_len=256)
    run_dir = tmp_path_factory.mktemp("instability")
    output = train(shards, run_dir, faults=("--blow-up", str(BLOWN), "--damage-after-save", "20"))
    return shards, run_dir, output


def test_an_instability_is_replayed_at_a_lower_rate_from_the_checkpoint_before_a_damaged_one(repaired):
    _, run_dir, output = repaired
    steps, events = lines(run_dir)
    damaged, rollback = events
    assert damaged["event"] == "checkpoint_damaged" and damaged["checkpoint"] == "step-0000020"
    assert "__1_0.distcp is truncated" in damaged["problem"] and (run_dir / "checkpoints/damaged/step-0000020").is_dir()
    assert rollback["event"] == "rollback" and rollback["at_step"] == BLOWN + 1 and rollback["cause"] == "optimizer"
    assert rollback["back_to"] == 10 and rollback["checkpoint"] == "step-0000010" and "skipped" not in rollback
    assert rollback["loss"] > rollback["probe_loss"] + 5 and abs(rollback["probe_loss"] - rollback["baseline"]) < 0.5
    assert rollback["weights_loss"] > rollback["baseline"] + 5  # the blown step's own batch: the weights broke
    assert "cause optimizer" in output
    cfg = TrainConfig(steps=STEPS, warmup_steps=4, lr=3e-3)
    for step in range(11, STEPS + 1):  # the lr of step s is the schedule's at index s - 1, times the factor
        index = step - 1
        factor = FACTOR if index < BLOWN + CALM else min(1.0, FACTOR + (1 - FACTOR) * (index - BLOWN - CALM + 1)
                                                        / (RAMP + 1))
        assert steps[step]["lr"] == pytest.approx(learning_rate(index, cfg) * factor, rel=1e-9), step
    assert sorted(steps) == list(range(1, STEPS + 1)) and all(r["applied"] for r in steps.values())
    assert max(r["loss"] for s, r in steps.items() if s > 10) < 7  # the replay went through the blown step


def test_a_resume_while_the_rate_is_lowered_is_bit_exact(repaired, tmp_path):
    shards, run_dir, _ = repaired
    expected, _ = lines(run_dir)
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    subprocess.run(["cp", "-r", str(run_dir / "checkpoints" / "step-0000030"), str(resumed / "checkpoints")],
                   check=True)
    train(shards, resumed, "--resume")
    steps, _ = lines(resumed)
    assert sorted(steps) == list(range(31, STEPS + 1))
    for step in steps:
        assert all(steps[step][k] == expected[step][k] for k in ("loss", "grad_norm", "lr", "token_sum")), step


def test_weights_turned_infinite_are_not_saved_and_the_steps_that_follow_roll_the_run_back(tmp_path):
    """Found by review (2026-12-07): a step at an infinite learning rate left weights from which every later step
    was non-finite; nothing counted them as a spike, so the run applied nothing to its end, exit code 0, and
    saved the broken weights over the sound checkpoints, which --resume then refused one by one."""
    shards = tmp_path / "shards"
    write_text_shards(shards, seq_len=256)
    run_dir = tmp_path / "run"
    train(shards, run_dir, faults=("--blow-up", "23:inf"))
    steps, events = lines(run_dir)
    not_finite = [e for e in events if e["event"] == "nonfinite"]
    assert [e["at_step"] for e in not_finite] == list(range(24, 31))  # 7, and the 8th (max_nonfinite) rolls back
    unsaved, rollback = [e for e in events if e["event"] != "nonfinite"]
    assert unsaved == {"event": "checkpoint_not_saved", "at_step": 30, "reason": "a weight is not finite",
                       "newest": "step-0000020"}
    assert rollback["event"] == "rollback" and rollback["at_step"] == 31 and rollback["cause"] == "optimizer"
    assert rollback["checkpoint"] == "step-0000020" and rollback["weights_loss"] is None  # not finite: null
    assert all(steps[s]["applied"] for s in range(21, STEPS + 1))  # replayed at the lowered rate from 20
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("step-*")) == [
        "step-0000010", "step-0000020", "step-0000030", "step-0000040"]  # 30 saved by the replay, finite
