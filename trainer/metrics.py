"""What a run reports, on rank 0: DIR/metrics.jsonl (one JSON object per line, appended on resume), a log
line, and the dashboards (trainer/dashboards.py: TensorBoard, Prometheus).

Lines: a step's record (`step`, ...); an event (`event`, `at_step`: the guard's repairs, a damaged
checkpoint, a slow rank, a warning at start); `start` (every rank's start checks: versions, NCCL library
and settings, host, driver); `heldout_at_step`, `benchmarks_at_step` and `ranks_at_step` (the ranks' busy
time and data wait) with their figures.
"""

import contextlib
import logging
import os
import stat
from pathlib import Path

from schemas import strict_json
from trainer.dashboards import DashboardConfig, Dashboards
from trainer.errors import RunStopped

log = logging.getLogger(__name__)
# counted in tokenmill_guard_events
DASHBOARD_EVENTS = ("nonfinite", "spike", "rollback", "stopped", "checkpoint_damaged", "empty_batch")


def _open_log(path: Path):
    """metrics.jsonl opened to append: a regular file, not through a link (one had its target appended to), never
    waited on (a FIFO there had hung rank 0 before its first step); RunStopped otherwise."""
    if os.path.islink(path):
        raise RunStopped(f"{path}: a symbolic link: refusing to follow it (remove it)", 2)
    if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        raise RunStopped(f"{path}: not a regular file (remove it)", 2)
    try:  # (and as opened, not by name: nothing swapped in between)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o644)
    except OSError as e:
        raise RunStopped(f"{path}: {e.strerror}", 2) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunStopped(f"{path}: not a regular file (remove it)", 2)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")


class Metrics:
    def __init__(self, path: Path | None, flops_per_token: float, peak: float | None, world: int,
                 dashboards: DashboardConfig | None = None):
        self.path, self.flops_per_token, self.peak, self.world = path, flops_per_token, peak, world
        self.dashboard_cfg, self.file, self.dashboards = dashboards, None, None

    def __enter__(self) -> "Metrics":
        if self.path is not None:
            self.file = _open_log(self.path)
            if self.dashboard_cfg is not None:
                try:
                    self.dashboards = Dashboards(self.dashboard_cfg, self.path.parent)
                except OSError as e:  # the Prometheus port taken, the folder not writable
                    self.file.close()
                    raise RunStopped(f"dashboards: {e}", 2) from None
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.file is not None:
                with contextlib.suppress(OSError):  # a full disk: the run's end is said already
                    self.file.close()
        finally:
            if self.dashboards is not None:
                self.dashboards.close()

    def _line(self, record: dict) -> None:
        if self.file is not None:
            try:
                self.file.write(strict_json.dumps(record) + "\n")
                self.file.flush()
            except OSError as e:  # a full disk had ended the run with a traceback, the dashboards left open
                raise RunStopped(f"{self.path}: cannot be written ({e.strerror or e}): the run stops at its last "
                                 f"checkpoint", 2) from None

    def start(self, ranks: list[dict], warnings: list[str]) -> None:
        """Every rank's start checks, and what was warned of."""
        for line in warnings if self.file is not None else ():
            log.warning("%s", line)
        self._line({"start": {"ranks": ranks, "warnings": warnings}})

    def loader(self, stats: dict, step: int) -> None:
        if self.dashboards is not None:
            self.dashboards.loader(stats, step)

    def event(self, kind: str, step: int, **details) -> None:
        """An event: its own line in metrics.jsonl (`event`, `at_step`; no `step`, which names a step's
        record) and in the log."""
        if self.file is not None:  # rank 0's line; every rank decided the same
            log.warning("%s at step %d: %s", kind, step, "; ".join(f"{k} {v}" for k, v in details.items()))
        self._line({"event": kind, "at_step": step, **details})
        if self.dashboards is not None and kind in DASHBOARD_EVENTS:
            self.dashboards.event(kind, step)

    def heldout(self, step: int, figures: dict) -> None:
        """The held-out figures by source: a line of their own (`heldout_at_step`) and a log line."""
        for name, f in figures.items():
            bpb = f" | {f['bits_per_byte']:.4f} ± {f['bits_per_byte_se']:.4f} bits/byte" if "bits_per_byte" in f else ""
            log.info("held out %s at step %d: loss %.4f ± %.4f over %d rows%s", name, step, f["loss"], f["loss_se"],
                     f["rows"], bpb)
        self._line({"heldout_at_step": step, "sources": figures})
        if self.dashboards is not None:
            self.dashboards.heldout(step, figures)

    def benchmarks(self, step: int, figures: dict) -> None:
        for name, f in figures.items():
            log.info("benchmark %s at step %d: acc %.4f ± %.4f, acc_norm %.4f ± %.4f over %d items (chance %.3f)",
                     name, step, f["acc"], f["acc_se"], f["acc_norm"], f["acc_norm_se"], f["items"], f["chance"])
        self._line({"benchmarks_at_step": step, "benchmarks": figures})
        if self.dashboards is not None:
            self.dashboards.benchmarks(step, figures)

    def ranks(self, step: int, compared: dict, hosts: list[str]) -> None:
        """The ranks' busy seconds and data wait per step, and a `slow_rank` event per rank newly slow."""
        self._line({"ranks_at_step": step, "hosts": hosts, **compared})
        for rank in compared["newly_slow"]:
            self.event("slow_rank", step, rank=rank, host=hosts[rank], busy_s=compared["busy_s"][rank],
                       median_busy_s=compared["median_busy_s"],  # everyone's; it was compared with the others'
                       others_median_busy_s=compared["others_median_busy_s"][rank],
                       data_wait_s=compared["data_wait_s"][rank])
        if self.dashboards is not None:
            self.dashboards.ranks(step, compared, hosts)

    def write(self, **record) -> None:
        if self.file is None:
            return
        record["mfu"] = record["tokens_per_s"] * self.flops_per_token / (self.peak * self.world) if self.peak else None
        self._line(record)
        if self.dashboards is not None:
            self.dashboards.step(record)
        mfu = f"{100 * record['mfu']:.1f}%" if self.peak else "n/a"
        log.info("step %6d | loss %.4f | lr %.2e | grad norm %.3f | %s tokens/s | MFU %s | data wait %.2f%%",
                 record["step"], record["loss"], record["lr"], record["grad_norm"], f"{record['tokens_per_s']:,.0f}",
                 mfu, record["data_wait_pct"])
