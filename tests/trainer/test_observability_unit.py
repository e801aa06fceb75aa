"""The run's own records against what the node can do to them (a review, 2026-12-07): metrics.jsonl that is a
folder, a FIFO or a link; a full disk under metrics.jsonl and TensorBoard; NCCL settings and launch variables
that torch failed on with a traceback; CUDA timer events held without bound."""

import errno
import logging
import os

import pytest

from trainer.dashboards import DashboardConfig, Dashboards
from trainer.errors import RunStopped
from trainer.metrics import Metrics


@pytest.mark.parametrize("kind", ["folder", "fifo", "link"])
def test_a_metrics_log_that_is_no_regular_file_is_one_line_not_a_hang_or_a_write_elsewhere(tmp_path, kind):
    path, victim = tmp_path / "metrics.jsonl", tmp_path / "victim.txt"
    victim.write_text("kept\n")
    {"folder": path.mkdir, "fifo": lambda: os.mkfifo(path), "link": lambda: path.symlink_to(victim)}[kind]()
    with pytest.raises(RunStopped, match="metrics.jsonl: (not a regular file|a symbolic link)") as stopped:
        with Metrics(path, 1.0, None, 1):
            pass
    assert stopped.value.code == 2 and victim.read_text() == "kept\n"


def test_a_full_disk_is_one_line_and_tensorboard_is_turned_off_with_a_warning(tmp_path, caplog, monkeypatch):
    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with Metrics(tmp_path / "metrics.jsonl", 1.0, None, 1) as metrics:
        metrics.event("spike", 3)
        monkeypatch.setattr(metrics.file, "write", full)
        with pytest.raises(RunStopped, match="metrics.jsonl: cannot be written .No space left on device"):
            metrics.event("spike", 4)
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 1

    dashboards = Dashboards(DashboardConfig(), tmp_path)
    monkeypatch.setattr(dashboards.writer, "add_scalar", full)
    with caplog.at_level(logging.WARNING, logger="trainer.dashboards"):
        dashboards.step({"step": 5, "loss": 2.0, "lr": 0.1})
        dashboards.step({"step": 6, "loss": 2.0})
    off = [r.getMessage()[:28] for r in caplog.records if r.name == "trainer.dashboards"]
    assert dashboards.writer is None and off == ["TensorBoard off from step 5:"]
    dashboards.close()


def test_nccl_env_may_not_hold_a_nul_or_override_async_error_handling():
    from trainer.nccl import NcclConfig

    with pytest.raises(ValueError, match="NCCL_DEBUG's value holds a NUL byte"):
        NcclConfig(env={"NCCL_DEBUG": "a\x00b"})
    with pytest.raises(ValueError, match="is set by async_error_handling"):  # it had silently won
        NcclConfig(async_error_handling=1, env={"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"})


@pytest.mark.parametrize("environ, problem", [
    ({"MASTER_PORT": "abc"}, "MASTER_PORT='abc' is not a whole number"),
    ({"MASTER_PORT": "70000"}, "MASTER_PORT=70000 is not a port"),
    ({"WORLD_SIZE": "x"}, "WORLD_SIZE='x' is not a whole number"),
    ({"MASTER_ADDR": ""}, "MASTER_ADDR is not set"),
    ({"RANK": "2"}, "RANK=2 is not below WORLD_SIZE=2"),
    ({"RANK": None}, "RANK is not set"),
    ({"LOCAL_RANK": "-1"}, "LOCAL_RANK='-1' is not a whole number"),
])
def test_launch_variables_torch_cannot_take_are_named(environ, problem):
    from trainer.loop import launch_problem

    good = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    assert launch_problem(good) is None
    changed = {k: v for k, v in {**good, **environ}.items() if v is not None}
    assert launch_problem(changed).startswith(problem)


def test_finished_cuda_timer_events_are_summed_and_let_go_as_they_come(monkeypatch):
    """Found by review: every block's event pair was held to the next comparison (stragglers.every steps): 16
    blocks over 16k steps held 256k pairs and their driver handles."""
    import torch

    from trainer import stragglers

    class Event:  # a CUDA event that has finished at once, 2 ms after its start
        def __init__(self, **_):
            self.recorded = False

        def record(self):
            self.recorded = True

        def query(self):
            return self.recorded

        def elapsed_time(self, _end):
            return 2.0

        def synchronize(self):
            pass

    monkeypatch.setattr(torch.cuda, "Event", Event)
    block = torch.nn.Linear(2, 2)
    timer = stragglers.ForwardTimer([block], torch.device("cuda"))
    timer.recording = True
    for _ in range(5000):
        block(torch.zeros(1, 2))
    assert len(timer.events) <= stragglers.MAX_PENDING_EVENTS
    assert timer.take() == pytest.approx(5000 * 0.002)
