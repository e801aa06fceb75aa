"""Two runs under torchrun, two CPU processes (gloo), on the same shards with benchmark accuracy in the loop
(an MMLU-layout JSON Lines file and a C-Eval-layout CSV): the second with --cpu-offload, NCCL settings from
the configuration, and rank 1 slowed on purpose (tests/trainer/fault_launcher.py). Offload and slowness
change no loss and no accuracy; the slow rank is named by rank and host; every rank's NCCL settings are in
the start record; a benchmark the shards' decontamination record does not list is warned of at start."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.decontamination import RECORD_FILE, new_record
from tests.shard_fixtures import write_text_shards
from trainer.contamination import file_sha256

pytestmark = pytest.mark.torchrun

REPO = Path(__file__).resolve().parents[2]
STEPS = 12
FACTS = [("the largest planet of the solar system", ["Jupiter", "Mars", "Venus", "Mercury"], 0),
         ("the package tool of Debian", ["pacman", "apt", "emerge", "brew"], 1),
         ("the file holding a Debian package's dependencies", ["README", "Makefile", "control", "LICENSE"], 2),
         ("the number of days in a leap year", ["365", "364", "360", "366"], 3)]


def items(n: int, asked: str = "Question") -> list[tuple[str, list[str], int]]:
    return [(f"{asked} {i}: what is {fact}?", choices[i % 4:] + choices[:i % 4], (answer - i % 4) % 4)
            for i in range(n) for fact, choices, answer in [FACTS[i % len(FACTS)]]]


@pytest.fixture(scope="module")
def benchmarks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("benchmarks")
    mmlu = folder / "mmlu.jsonl"
    records = [{"question": q, "subject": "misc", "choices": c, "answer": a} for q, c, a in items(12)]
    records += [{"question": "no answer", "choices": ["a", "b"], "answer": 5}, {"choices": ["a", "b"], "answer": 0}]
    mmlu.write_text("".join(json.dumps(r) + "\n" for r in records))
    ceval = folder / "ceval.csv"
    with open(ceval, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "question", "A", "B", "C", "D", "answer", "explanation"])
        writer.writerows([i, q, *c, "ABCD"[a], ""] for i, (q, c, a) in enumerate(items(10, "Problem")))
    return mmlu, ceval


def train(shards: Path, run_dir: Path, benchmarks, *extra: str, faults: tuple[str, ...] = ()) -> None:
    mmlu, ceval = benchmarks
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(REPO / "tests" / "trainer" / "fault_launcher.py"), *faults, "--shards", str(shards), "--run-dir",
         str(run_dir), "--steps", str(STEPS), "--global-batch-size", "4", "--warmup-steps", "2", "--lr", "3e-3",
         "--checkpoint-every", "100", "--heldout.every", "0", "--benchmark", f"mmlu={mmlu}", "--benchmark",
         f"ceval={ceval}", "--eval.every", "6", "--eval.items", "8", "--eval.batch-rows", "5",
         "--stragglers.every", "2", "--stragglers.checks", "3", *extra],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


def lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(benchmarks, tmp_path_factory):
    shards = tmp_path_factory.mktemp("shards")
    write_text_shards(shards, seq_len=256)
    plain, offloaded = tmp_path_factory.mktemp("plain"), tmp_path_factory.mktemp("offloaded")
    train(shards, plain, benchmarks)
    mmlu, _ = benchmarks  # the shards' record: cut against mmlu's file alone (by its checksum)
    (shards / RECORD_FILE).write_text(json.dumps(new_record(
        {"mmlu-renamed": [("mmlu.jsonl", mmlu.stat().st_size, file_sha256(str(mmlu)))]})))
    train(shards, offloaded, benchmarks, "--cpu-offload", "--nccl.env", "{NCCL_SOCKET_IFNAME: lo}",
          faults=("--slow-rank", "1:0.05"))
    return lines(plain), lines(offloaded)


def test_cpu_offload_and_a_slow_rank_change_no_loss_and_no_accuracy(runs):
    plain, offloaded = runs
    losses = [[(r["step"], r["loss"], r["grad_norm"]) for r in run if "step" in r] for run in runs]
    assert len(losses[0]) == STEPS and losses[0] == losses[1]
    scores = [[r for r in run if "benchmarks_at_step" in r] for run in runs]
    assert [r["benchmarks_at_step"] for r in scores[0]] == [6, 12] and scores[0] == scores[1]
    for figures in scores[0][-1]["benchmarks"].values():
        assert figures["items"] == 8 and figures["chance"] == 0.25
        for measure in ("acc", "acc_norm", "acc_per_token"):
            p = figures[measure]
            assert 0 <= p <= 1 and figures[f"{measure}_se"] == pytest.approx((p * (1 - p) / 7) ** 0.5)


def test_the_slow_rank_is_named_by_rank_and_host(runs):
    _, offloaded = runs
    slow = [r for r in offloaded if r.get("event") == "slow_rank"]
    assert len(slow) == 1 and slow[0]["rank"] == 1 and slow[0]["host"] and slow[0]["at_step"] == 6, slow
    assert slow[0]["busy_s"] > 1.2 * slow[0]["others_median_busy_s"]  # what it was compared with
    compared = [r for r in offloaded if "ranks_at_step" in r]
    assert [r["ranks_at_step"] for r in compared] == list(range(2, STEPS + 1, 2))
    assert all(r["busy_s"][1] > r["busy_s"][0] for r in compared) and compared[-1]["slow"] == [1]


def test_every_ranks_nccl_settings_are_recorded_and_an_uncut_benchmark_is_warned_of(runs):
    plain, offloaded = runs
    for start in (plain[0]["start"], offloaded[0]["start"]):
        assert [r["rank"] for r in start["ranks"]] == [0, 1]
        assert all("TORCH_NCCL_ASYNC_ERROR_HANDLING=1" in r["NCCL settings"] for r in start["ranks"])
        assert all(r["NCCL library"] == "none (none)" and r["driver"] == "none" for r in start["ranks"])  # no GPU
    assert all("NCCL_SOCKET_IFNAME=lo" in r["NCCL settings"] for r in offloaded[0]["start"]["ranks"])
    warned = [w for w in plain[0]["start"]["warnings"] if "not known to be cut" in w]
    assert sorted(w.split(":")[0] for w in warned) == ["benchmark ceval", "benchmark mmlu"]
    assert "decontamination.json is missing" in warned[0]
    notes = plain[0]["start"]["warnings"]  # the records that are no item, by reason
    assert "benchmark mmlu: 1 records left out (no answer (a letter or an index of a choice))" in notes
    assert "benchmark mmlu: 1 records left out (no question (or over the size limit))" in notes
    warned = [w for w in offloaded[0]["start"]["warnings"] if "not cut" in w]
    assert len(warned) == 1 and warned[0].startswith("benchmark ceval: ") and "mmlu-renamed" in warned[0]
