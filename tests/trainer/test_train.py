"""jobs/train.py under torchrun, two CPU processes (gloo), the tiny model on shards of real sample text:
the loss goes down, checkpoints are saved asynchronously and rotated, kill -9 then --resume gives
bit-identical losses, a run saved at 2 processes resumes at 1 with the same data, and a resume whose
newest checkpoints are damaged (truncated, a file missing, corrupt, DCP's load failing) falls back to the
one before, names what was wrong, moves the damaged ones aside and goes on bit for bit."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.shard_fixtures import write_text_mixture, write_text_shards

pytestmark = pytest.mark.torchrun

REPO = Path(__file__).resolve().parents[2]
STEPS = 24


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("text-shards")
    write_text_shards(folder, seq_len=256)
    return folder


def command(processes: int, shards: Path, run_dir: Path, *extra: str, faults: tuple[str, ...] = ()) -> list[str]:
    script = [str(REPO / "tests" / "trainer" / "fault_launcher.py"), *faults] if faults else [
        str(REPO / "jobs" / "train.py")]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
            *script, "--shards", str(shards), "--run-dir", str(run_dir), "--model", "tiny",
            "--steps", str(STEPS), "--global-batch-size", "4", "--warmup-steps", "4", "--lr", "3e-3",
            "--checkpoint-every", "8", "--keep-checkpoints", "3", *extra]


def group_writable():
    os.umask(0o002)  # as where every user has a group of their own: the run's files must still be theirs alone


def train(processes: int, shards: Path, run_dir: Path, *extra: str, preexec=None, faults=()) -> str:
    child = subprocess.Popen(command(processes, shards, run_dir, *extra, faults=faults), cwd=REPO,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=preexec)
    try:
        output, _ = child.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # torchrun and its workers
        output, _ = child.communicate()
        pytest.fail(f"training hung:\n{output[-3000:]}")
    assert child.returncode == 0, output[-3000:]
    return output


def metrics(run_dir: Path) -> dict[int, dict]:
    """The metrics per step; a step run twice (killed, then resumed) keeps its last record."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {record["step"]: record for record in map(json.loads, lines) if "step" in record}


@pytest.fixture(scope="module")
def uninterrupted(shards, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    train(2, shards, run_dir)
    return run_dir


def test_the_loss_goes_down_and_checkpoints_rotate(uninterrupted):
    steps = metrics(uninterrupted)
    assert sorted(steps) == list(range(1, STEPS + 1))
    first, last = steps[1]["loss"], sum(steps[s]["loss"] for s in range(STEPS - 3, STEPS + 1)) / 4
    assert last < first - 0.5, (first, last)  # from ln(1024) = 6.93
    record = steps[STEPS]
    assert set(record) >= {"step", "loss", "lr", "grad_norm", "tokens_per_s", "mfu", "data_wait_pct"}
    assert record["grad_norm"] > 0 and record["tokens_per_s"] > 0 and 0 <= record["data_wait_pct"] < 100
    assert steps[2]["lr"] > steps[1]["lr"] and steps[STEPS]["lr"] < steps[8]["lr"]  # warmup, then decay
    saved = sorted(p.name for p in (uninterrupted / "checkpoints").iterdir())
    assert saved == ["step-0000008", "step-0000016", "step-0000024"]  # the newest three, complete (no .partial)
    assert all((uninterrupted / "checkpoints" / name / ".metadata").is_file() for name in saved)
    assert all((uninterrupted / "checkpoints" / name / "manifest.json").is_file() for name in saved)


def test_kill_9_then_resume_gives_bit_identical_losses(shards, uninterrupted, tmp_path):
    run_dir = tmp_path / "killed"
    child = subprocess.Popen(command(2, shards, run_dir), cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=group_writable)
    deadline = time.monotonic() + 240
    while not (run_dir / "checkpoints" / "step-0000008").is_dir() or max(metrics(run_dir), default=0) < 10:
        assert child.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    (run_dir / "checkpoints" / "step-9999999.partial").mkdir()  # as a save killed half way would leave
    train(2, shards, run_dir, "--resume", preexec=group_writable)
    expected, resumed = metrics(uninterrupted), metrics(run_dir)
    assert sorted(resumed) == list(range(1, STEPS + 1))
    for step in range(9, STEPS + 1):  # the resumed run went on from step 8 (or later)
        for key in ("loss", "grad_norm", "lr", "token_sum"):
            assert resumed[step][key] == expected[step][key], (step, key)
    assert not (run_dir / "checkpoints" / "step-9999999.partial").exists()


def test_a_run_saved_at_2_processes_resumes_at_1_with_the_same_data(shards, uninterrupted, tmp_path):
    run_dir = tmp_path / "elastic"
    (run_dir / "checkpoints").mkdir(parents=True)
    source = uninterrupted / "checkpoints" / "step-0000016"
    subprocess.run(["cp", "-r", str(source), str(run_dir / "checkpoints")], check=True)
    train(1, shards, run_dir, "--resume")
    expected, resumed = metrics(uninterrupted), metrics(run_dir)
    assert sorted(resumed) == list(range(17, STEPS + 1))
    for step in resumed:
        assert resumed[step]["token_sum"] == expected[step]["token_sum"]  # exactly the same samples
        assert resumed[step]["loss"] == pytest.approx(expected[step]["loss"], rel=2e-2)  # resharded, bf16


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    return write_text_mixture(tmp_path_factory.mktemp("mixture"), {"en": 0.75, "zh": 0.25},
                              {"en": ("debian-faq.en",), "zh": ("debian-faq.zh",)}, seq_len=256)


def test_a_mixture_trains_with_each_sources_tokens_and_loss_and_new_weights_need_consent(mixture, tmp_path):
    run_dir = tmp_path / "mixture"
    train(2, mixture, run_dir, "--steps", "8", "--checkpoint-every", "4")
    steps = metrics(run_dir)
    for record in steps.values():
        assert record["source_rows"] == {"en": 3, "zh": 1}  # 0.75 / 0.25 of 4 rows, every step
        tokens, losses = record["source_tokens"], record["source_loss"]
        assert all(tokens[name] > 0 and losses[name] > 0 for name in ("en", "zh"))
        mean = sum(tokens[n] * losses[n] for n in tokens) / sum(tokens.values())
        assert mean == pytest.approx(record["loss"], rel=1e-6)
    # Resumed with other weights: refused unless allowed, then the new rows per step from there on.
    shutil.rmtree(run_dir / "checkpoints" / "step-0000008")
    refused = subprocess.run(command(1, mixture, run_dir, "--resume", "--weights", "en=1,zh=1", "--steps", "8"),
                             cwd=REPO, capture_output=True, text=True, timeout=180)
    assert refused.returncode != 0 and "allow_new_weights" in refused.stdout + refused.stderr
    train(1, mixture, run_dir, "--resume", "--weights", "en=1,zh=1", "--allow-new-weights", "--steps", "8")
    resumed = metrics(run_dir)
    assert [resumed[s]["source_rows"] for s in range(5, 9)] == [{"en": 2, "zh": 2}] * 4


def test_held_out_bits_per_byte_of_the_trained_checkpoint(uninterrupted, shards, sample_dir):
    import math

    from trainer.evaluate import EvalConfig, evaluate

    held_out = str(sample_dir / "licenses.en*")  # text the run did not train on
    result = evaluate(EvalConfig(run_dir=str(uninterrupted), shards=str(shards),
                                 tokenizer=str(shards / "tokenizer.json"), input=held_out))
    assert result["checkpoint"] == f"step-{STEPS:07d}" and result["docs"] > 10
    assert result["bits_per_byte"] == pytest.approx(
        result["loss_per_token"] * result["tokens"] / math.log(2) / result["bytes"], rel=1e-3)
    assert result["loss_per_token"] < math.log(1024) - 0.5  # the trained weights, not a fresh model's ln(V)


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def invert_every_byte(path: Path) -> None:
    path.write_bytes(bytes(255 - b for b in path.read_bytes()))  # the same size: only a load can tell


DAMAGE = {"truncated": lambda f: os.truncate(f, f.stat().st_size // 2), "missing": Path.unlink,
          "corrupt": flip_a_byte, "garbled": invert_every_byte}


@pytest.mark.parametrize("damages, options, problems", [
    ({"step-0000024": ("__1_0.distcp", "truncated"), "step-0000016": ("__0_0.distcp", "missing")}, (),
     ["__1_0.distcp is truncated", "__0_0.distcp is missing"]),
    ({"step-0000024": ("__0_0.distcp", "corrupt")}, ("--fail-load", "step-0000016"),
     ["__0_0.distcp is corrupt: its checksum differs", "DCP's load failed: CheckpointException on rank 0: "
                                                        "RuntimeError: injected"]),
    # without checksums DCP's own load is the last check: what it raises (a BaseException) is a damaged
    # checkpoint like any other, not the run's end
    ({"step-0000024": ("__0_0.distcp", "garbled"), "step-0000016": ("__1_0.distcp", "garbled")},
     ("--checkpoint-checksums", "false"), ["DCP's load failed: CheckpointException"] * 2),
], ids=["truncated-missing", "corrupt-dcp-fails", "garbled-without-checksums"])
def test_damaged_newest_checkpoints_fall_back_to_the_one_before_and_the_run_goes_on_bit_for_bit(
        shards, uninterrupted, tmp_path, damages, options, problems):
    run_dir = tmp_path / "damaged"
    run_dir.mkdir()
    subprocess.run(["cp", "-r", str(uninterrupted / "checkpoints"), str(run_dir)], check=True)
    for name, (file, how) in damages.items():
        DAMAGE[how](run_dir / "checkpoints" / name / file)
    faults = options if options and options[0] == "--fail-load" else ()
    output = train(2, shards, run_dir, "--resume", *(() if faults else options), faults=faults)
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    damaged = [line for line in lines if line.get("event") == "checkpoint_damaged"]
    assert [d["checkpoint"] for d in damaged] == ["step-0000024", "step-0000016"], damaged  # newest first
    assert all(problem in d["problem"] for problem, d in zip(problems, damaged)), damaged
    assert sum("checkpoint_damaged at step 0: checkpoint step-0000024" in line for line in output.splitlines()) == 1
    aside = run_dir / "checkpoints" / "damaged"
    assert sorted(p.name for p in aside.iterdir()) == ["step-0000016", "step-0000024"]  # moved, not deleted
    assert problems[0] in (aside / "step-0000024" / "damaged.txt").read_text()
    expected, resumed = metrics(uninterrupted), metrics(run_dir)
    assert sorted(resumed) == list(range(9, STEPS + 1))  # from step-0000008, the newest that loads
    for step in resumed:
        assert all(resumed[step][k] == expected[step][k] for k in ("loss", "grad_norm", "lr", "token_sum")), step


def stopped(shards: Path, run_dir: Path, *extra: str) -> str:
    """A run of one process (jobs/train.py without torchrun, whose own exit code would be 1) that must stop
    at its start: exit code 2 and one error line, which is returned."""
    launch = command(1, shards, run_dir, *extra)
    at = launch.index(str(REPO / "jobs" / "train.py"))
    done = subprocess.run([sys.executable, *launch[at:]], cwd=REPO, capture_output=True, text=True, timeout=180)
    errors = sorted({line for line in done.stderr.splitlines() if line.startswith("jobs.train: error:")})
    assert done.returncode == 2 and len(errors) == 1, done.stderr[-3000:]
    return errors[0]


def test_a_new_run_on_a_folder_of_checkpoints_and_a_resume_after_all_were_moved_aside_stop_naming_why(
        shards, uninterrupted, tmp_path):
    run_dir = tmp_path / "again"
    run_dir.mkdir()
    subprocess.run(["cp", "-r", str(uninterrupted / "checkpoints"), str(run_dir)], check=True)
    # without --resume, the first save met a folder of the same name (OSError, a traceback on each rank)
    assert "--resume goes on from them" in stopped(shards, run_dir)
    for checkpoint in (run_dir / "checkpoints").glob("step-*"):
        invert_every_byte(checkpoint / "__0_0.distcp")
    assert "no checkpoint in" in stopped(shards, run_dir, "--resume")  # each moved aside, named
    # a second --resume once trained from step 1 over them, silently
    line = stopped(shards, run_dir, "--resume")
    assert "to resume from: 3 were moved to damaged/" in line, line


@pytest.mark.parametrize("extra, message", [
    # found by review (2026-12-07): each was a traceback of 15-20 lines and exit code 1
    (("--weights", "garbage"), "weights: 'garbage' is not NAME=WEIGHT"),
    (("--weights", "a=1"), "weights of a need a mixture"),
    (("--global-batch-size", "1000000000000"), "global_batch_size must be in 1-"),
    (("--nccl.timeout-s", "1e18"), "timeout_s in 1-604800"),
    (("--num-workers", "1000000"), "num_workers must be at most 256"),
])
def test_settings_the_loader_or_the_process_group_cannot_take_stop_the_run_in_one_line(shards, tmp_path, extra,
                                                                                        message):
    assert message in stopped(shards, tmp_path / "run", *extra)


def test_shards_that_are_not_there_stop_the_run_in_one_line(tmp_path):
    assert "index.json: missing" in stopped(tmp_path / "nothing", tmp_path / "run")


def test_a_run_folder_that_is_the_shards_folder_or_inside_it_is_refused(shards):
    """Found by review (2026-12-07): checkpoints/, metrics.jsonl and the run's lock were written among the shards."""
    for run_dir in (shards, shards / "train"):
        assert "is the shards folder" in stopped(shards, run_dir)
    assert not (shards / "checkpoints").exists() and not (shards / ".run.lock").exists()


def test_a_checkpoint_of_other_shards_of_the_same_shape_is_not_resumed(shards, uninterrupted, tmp_path):
    """Noticed in review (2026-12-07): a loader state holds positions, not what they are of; shards of the same
    sources, epoch sizes and rows but other content resumed, the run going on at positions of another order.
    The manifest names the shards by their checksums: the same shards copied elsewhere resume."""
    def one_token_changed(tokens, *_):
        tokens[0][1] = (int(tokens[0][1]) + 1) % 1024

    other = tmp_path / "other"
    write_text_shards(other, seq_len=256, edit_rows=one_token_changed)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copytree(uninterrupted / "checkpoints", run_dir / "checkpoints")
    assert "was saved by a run on other shards" in stopped(other, run_dir, "--resume")
    copy = tmp_path / "copy"
    shutil.copytree(shards, copy)
    launch = command(1, copy, run_dir, "--resume")
    done = subprocess.run([sys.executable, *launch[launch.index(str(REPO / "jobs" / "train.py")):]], cwd=REPO,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and f"resumed from {run_dir / 'checkpoints' / f'step-{STEPS:07d}'}" in done.stderr, \
        done.stderr[-3000:]
