"""Held-out loss during training (two CPU processes): the first rows of the held-out shards, the same
every time and at any world size, loss and bits per byte with their standard errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prep.tokenizer.encode import TokenizerFile
from tests.shard_fixtures import write_text_shards

pytestmark = pytest.mark.torchrun

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("with-heldout")
    write_text_shards(folder, seq_len=256)
    tokenizer = TokenizerFile.read(str(folder / "tokenizer.json"))
    write_text_shards(folder / "heldout", seq_len=256, files=("debian-handbook.en",), parts=2,
                      tokenizer_file=tokenizer)
    return folder


def evaluations(processes: int, shards: Path, run_dir: Path, steps: int) -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
         str(REPO / "jobs" / "train.py"), "--shards", str(shards), "--run-dir", str(run_dir), "--steps", str(steps),
         "--global-batch-size", "4", "--warmup-steps", "2", "--lr", "3e-3", "--checkpoint-every", "100",
         "--heldout.every", "4", "--heldout.rows", "20", "--heldout.batch-rows", "3",
         "--heldout.tokenizer", str(shards / "tokenizer.json")],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [line for line in lines if "heldout_at_step" in line]


def test_the_same_held_out_rows_every_time_with_loss_bits_per_byte_and_errors(shards, tmp_path):
    found = evaluations(2, shards, tmp_path / "two", 12)
    assert [e["heldout_at_step"] for e in found] == [4, 8, 12]
    figures = [e["sources"]["default"] for e in found]
    assert all(f["rows"] == 20 and f["tokens"] == figures[0]["tokens"] and f["bytes"] == figures[0]["bytes"]
               for f in figures)  # 20 rows over 2 ranks in passes of 3: every row once, the same rows
    assert figures[-1]["loss"] < figures[0]["loss"] and all(0 < f["loss_se"] < 0.5 for f in figures)
    assert all(0 < f["bits_per_byte"] < 8 and 0 < f["bits_per_byte_se"] for f in figures)
    ratio = figures[0]["bytes"] / figures[0]["tokens"]  # bits per byte is the loss in bits over the bytes
    assert abs(figures[0]["bits_per_byte"] - figures[0]["loss"] / 0.6931471805599453 / ratio) < 1e-9
    one = evaluations(1, shards, tmp_path / "one", 4)[0]["sources"]["default"]
    assert (one["rows"], one["tokens"], one["bytes"]) == (20, figures[0]["tokens"], figures[0]["bytes"])


def test_training_shards_given_as_the_held_out_ones_are_refused(shards, tmp_path):
    """Found by review (2026-12-07): heldout.heldout set to the training shards measured a "held-out" loss on
    rows the run trains on, without a word."""
    done = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "train.py"), "--shards", str(shards), "--run-dir", str(tmp_path / "r"),
         "--steps", "2", "--global-batch-size", "4", "--warmup-steps", "1", "--heldout.every", "1",
         "--heldout.heldout", str(shards)], cwd=REPO, capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stderr.splitlines() if line.startswith("jobs.train: error:")]
    assert done.returncode == 2 and len(errors) == 1 and "is a training shard too (2 of 2)" in errors[0], done.stderr
