"""The run's dashboards: TensorBoard event files with the step figures, the held-out loss, benchmark accuracy,
each rank's busy time and the guard's events; a Prometheus endpoint serving them while the run goes;
`python -m jobs.plot` drawing the curves. One process (jobs/train.py through tests/trainer/fault_launcher.py,
no torchrun)."""

import json
import math
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from prep.tokenizer.encode import TokenizerFile
from tests.shard_fixtures import write_text_shards

pytestmark = pytest.mark.torchrun

REPO = Path(__file__).resolve().parents[2]
STEPS = 16


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tensorboard_prometheus_and_the_plot(tmp_path):
    shards = tmp_path / "shards"
    write_text_shards(shards, seq_len=256)
    write_text_shards(shards / "heldout", seq_len=256, files=("debian-handbook.en",),
                      tokenizer_file=TokenizerFile.read(str(shards / "tokenizer.json")))
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"question": f"{i} + {i} =", "choices": [str(2 * i), str(2 * i + 1)],
                                         "answer": 0}) + "\n" for i in range(6)))
    port, run_dir, released = free_port(), tmp_path / "run", tmp_path / "scraped"
    log = (tmp_path / "train.log").open("w")
    child = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "trainer" / "fault_launcher.py"), "--nonfinite-grad", "3",
         "--hold-endpoint", str(released), "--shards", str(shards), "--run-dir", str(run_dir),
         "--steps", str(STEPS), "--global-batch-size", "4", "--warmup-steps", "2", "--heldout.every", "8",
         "--heldout.rows", "8", "--dashboards.prometheus-port", str(port), "--benchmark", f"sums={items}",
         "--eval.every", "8", "--stragglers.every", "4"], cwd=REPO, stdout=log,
        stderr=subprocess.STDOUT)
    # The endpoint stays up at the end until `released` exists: scraped until it shows the last step.
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 never through a proxy
    scraped, deadline = "", time.monotonic() + 600
    while child.poll() is None and f"tokenmill_step {float(STEPS)}" not in scraped and time.monotonic() < deadline:
        try:
            scraped = direct.open(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:
            time.sleep(0.2)
    released.touch()
    assert child.wait(timeout=120) == 0, (tmp_path / "train.log").read_text()[-3000:]
    assert f"tokenmill_step {float(STEPS)}" in scraped, scraped
    assert "tokenmill_loss " in scraped and "tokenmill_data_wait_milliseconds" in scraped
    assert 'tokenmill_guard_events_total{kind="nonfinite"} 1.0' in scraped
    assert 'tokenmill_benchmark_accuracy{benchmark="sums",measure="acc"}' in scraped
    assert 'tokenmill_benchmark_accuracy_stderr{benchmark="sums",measure="acc_norm"}' in scraped
    assert 'tokenmill_rank_busy_seconds{host="' in scraped and 'tokenmill_rank_slow{host="' in scraped

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"train/loss", "train/lr", "train/tokens_per_s", "train/step_seconds", "heldout/default/loss",
            "heldout/default/bits_per_byte", "guard/nonfinite", "benchmarks/sums/acc",
            "benchmarks/sums/acc_per_token_se", "ranks/busy_s/rank0", "ranks/data_wait_s/rank0",
            "ranks/slow/rank0"} <= set(tags)
    assert [e.step for e in events.Scalars("benchmarks/sums/acc")] == [8, 16]
    assert [e.step for e in events.Scalars("train/loss")] == list(range(1, STEPS + 1))
    assert [e.step for e in events.Scalars("heldout/default/loss")] == [8, 16]

    done = subprocess.run([sys.executable, "-m", "jobs.plot", str(run_dir)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0 and "passed over" not in done.stderr, done.stderr  # every line the loop's
    png = (run_dir / "metrics.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    missing = subprocess.run([sys.executable, "-m", "jobs.plot", str(tmp_path)], cwd=REPO, capture_output=True,
                             text=True)
    assert missing.returncode == 2 and "missing" in missing.stderr


def test_the_plot_reads_figures_that_are_not_numbers(tmp_path):
    from jobs.plot import plot
    from trainer.metrics import Metrics

    with Metrics(tmp_path / "metrics.jsonl", flops_per_token=1.0, peak=None, world=1) as metrics:
        metrics._line({"step": 1, "loss": 3.0, "lr": 1e-4, "tokens_per_s": 100.0})
        metrics._line({"step": 2, "loss": math.nan, "lr": 1e-4, "tokens_per_s": 100.0})
        metrics.heldout(2, {"default": {"rows": 1, "tokens": 10, "loss": 2.9, "loss_se": math.nan}})
        metrics.event("rollback", 2, loss=math.inf)
    assert "NaN" not in (tmp_path / "metrics.jsonl").read_text()
    plot(tmp_path, tmp_path / "metrics.png")
    assert (tmp_path / "metrics.png").read_bytes().startswith(b"\x89PNG")


def test_the_grafana_dashboard_shows_what_the_endpoint_serves():
    from trainer.dashboards import STEP_FIGURES

    dashboard = json.loads((REPO / "dashboards" / "grafana.json").read_text())
    queried = " ".join(t["expr"] for panel in dashboard["panels"] for t in panel["targets"])
    served = [name for name, _ in STEP_FIGURES.values()] + [
        "tokenmill_heldout_loss", "tokenmill_heldout_bits_per_byte", "tokenmill_guard_events_total", "tokenmill_loader",
        "tokenmill_benchmark_accuracy", "tokenmill_benchmark_accuracy_stderr", "tokenmill_rank_busy_seconds",
        "tokenmill_rank_data_wait_seconds", "tokenmill_rank_slow"]
    assert all(name in queried for name in served)


def test_the_plot_passes_over_what_is_no_record_of_the_loops_and_replaces_a_link_not_its_target(tmp_path, capsys):
    """Found by review (2026-12-07): a line cut short by a kill, bytes that are not UTF-8, a string where a figure
    goes, a `$` in a source's name and `"step": true` were tracebacks or a wrong chart; a metrics.png that is a
    link had its target overwritten."""
    from jobs.plot import main, read

    lines = [json.dumps({"step": s, "loss": 3.0 - 0.1 * s, "lr": 1e-4, "tokens_per_s": 100.0}) for s in (1, 2, 3)]
    lines += [json.dumps({"step": 4, "loss": "abc", "lr": "high", "tokens_per_s": 100.0}),
              json.dumps({"step": True, "loss": 99.0}),  # no step 1: passed over
              json.dumps({"heldout_at_step": 2, "sources": {"a$b": {"loss": 2.5, "loss_se": 0.1}}}),
              json.dumps({"event": "rollback", "at_step": "x"}), "[[[[", "\u2028 not json", '{"step": 5, "lo']
    (tmp_path / "metrics.jsonl").write_bytes("\n".join(lines).encode() + b"\n\xff\xfe\n" + b'{"step": 6')
    victim = tmp_path / "notes.txt"
    victim.write_text("precious")
    (tmp_path / "metrics.png").symlink_to(victim)
    found = read(tmp_path / "metrics.jsonl")
    assert sorted(found.steps) == [1, 2, 3, 4] and found.steps[1]["loss"] == 2.9
    assert math.isnan(found.steps[4]["loss"]) and math.isnan(found.steps[4]["lr"])  # a gap, not a category
    assert found.heldout == {2: {"a$b": (2.5, 0.1)}} and found.events == []
    assert found.passed_over == {"not JSON": 4, "not a record of the loop's": 2, "not UTF-8": 1}
    assert main([str(tmp_path)]) == 0
    assert victim.read_text() == "precious" and not (tmp_path / "metrics.png").is_symlink()
    assert (tmp_path / "metrics.png").read_bytes().startswith(b"\x89PNG")
    assert "4 lines of" in capsys.readouterr().err
