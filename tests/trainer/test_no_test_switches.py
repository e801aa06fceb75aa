"""No test switch in the product: a run with TOKENMILL_TEST_* (and other unknown TOKENMILL_*) variables set is
the run without them, step for step, and ends (the tests inject their faults from tests/trainer/
fault_launcher.py instead). One process (`python jobs/train.py`, no torchrun)."""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.shard_fixtures import write_text_shards

SWITCH = re.compile(r"environ[^)]*_TEST_|TOKENMILL_TEST")
UNKNOWN = {"TOKENMILL_TEST_NONFINITE_GRAD": "2", "TOKENMILL_TEST_LEAVE_OUT": "norm.weight",
           "TOKENMILL_TEST_TORCH_VERSION": "0:0.0.0", "TOKENMILL_TEST_HOLD_ENDPOINT": "/nonexistent",
           "TOKENMILL_TEST_ANYTHING": "1", "TOKENMILL_DEBUG": "1"}


def test_no_product_code_reads_a_test_switch():
    found = []
    for path in REPO.rglob("*.py"):
        relative = path.relative_to(REPO)
        if relative.parts[0] in ("tests", ".venv", "out") or relative.parts[0].startswith("."):
            continue
        found += [f"{relative}:{n}" for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
                  if SWITCH.search(line)]
    assert found == []


def run(shards: Path, run_dir: Path, env: dict) -> dict[int, dict]:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TOKENMILL_")}
    done = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "train.py"), "--shards", str(shards), "--run-dir", str(run_dir),
         "--steps", "4", "--global-batch-size", "2", "--warmup-steps", "1", "--checkpoint-every", "4",
         "--dashboards.tensorboard", "false", "--dashboards.prometheus-port", str(port)],
        cwd=REPO, capture_output=True, text=True, timeout=300, env={**clean, **env})  # a held endpoint: a timeout
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert not [line for line in lines if "event" in line]  # no injected non-finite step
    return {r["step"]: {k: r[k] for k in ("loss", "grad_norm", "lr", "token_sum", "applied")} for r in lines
            if "step" in r}


@pytest.mark.torchrun
def test_unknown_tokenmill_variables_change_nothing_in_a_run(tmp_path):
    shards = tmp_path / "shards"
    write_text_shards(shards, seq_len=256)
    with_variables = run(shards, tmp_path / "with", UNKNOWN)
    assert with_variables == run(shards, tmp_path / "without", {})
    assert sorted(with_variables) == [1, 2, 3, 4] and all(r["applied"] for r in with_variables.values())
