"""Dashboards of a run, on rank 0: TensorBoard event files in DIR/tensorboard/ and a Prometheus endpoint.

Every step's figures (loss, learning rate, gradient norm, tokens/s, MFU, step seconds, data wait in
milliseconds, checkpoint save seconds), the held-out loss and bits per byte by source, the guard's
events and the loader's counters go to both. The endpoint (`prometheus_port`, 0 for none) serves
them as gauges and counters named tokenmill_*; dashboards/grafana.json is a Grafana dashboard of them.
"""

import logging
import math
from dataclasses import dataclass
from pathlib import Path

from trainer import test_hooks

log = logging.getLogger(__name__)

STEP_FIGURES = {  # metrics.jsonl key: (Prometheus name, help)
    "loss": ("tokenmill_loss", "training loss over the real tokens of the step's global batch"),
    "lr": ("tokenmill_learning_rate", "learning rate of the step"),
    "grad_norm": ("tokenmill_grad_norm", "global gradient norm before clipping"),
    "tokens_per_s": ("tokenmill_tokens_per_second", "tokens of the global batch per second of the step"),
    "mfu": ("tokenmill_mfu", "model FLOPs utilization (CUDA only)"),
    "step_seconds": ("tokenmill_step_seconds", "seconds of the step, data wait included"),
    "data_wait_ms": ("tokenmill_data_wait_milliseconds", "milliseconds the step waited for its batch"),
    "checkpoint_seconds": ("tokenmill_checkpoint_save_seconds", "seconds the step spent starting a checkpoint save"),
}


@dataclass(frozen=True)
class DashboardConfig:
    """Where a run's figures go besides metrics.jsonl (rank 0)."""
    tensorboard: bool = True  # event files in RUN_DIR/tensorboard/ (tensorboard --logdir RUN_DIR/tensorboard)
    prometheus_port: int = 0  # > 0: serve the figures for Prometheus on this port of rank 0's host (0: none)

    def __post_init__(self):
        if not 0 <= self.prometheus_port < 65536:
            raise ValueError(f"prometheus_port must be a port number, got {self.prometheus_port}")


class Dashboards:
    def __init__(self, cfg: DashboardConfig, run_dir: Path):
        self.writer, self.gauges, self.events, self.loader_gauge, self.heldout_gauges = None, {}, None, None, None
        if cfg.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(run_dir / "tensorboard"))
        if cfg.prometheus_port:
            from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

            registry = CollectorRegistry()  # the run's own: no process-wide default collectors
            self.gauges = {key: Gauge(name, text, registry=registry) for key, (name, text) in STEP_FIGURES.items()}
            self.step_gauge = Gauge("tokenmill_step", "the last step done", registry=registry)
            self.heldout_gauges = {
                "loss": Gauge("tokenmill_heldout_loss", "held-out loss per token", ["source"], registry=registry),
                "bits_per_byte": Gauge("tokenmill_heldout_bits_per_byte", "held-out bits per byte", ["source"],
                                       registry=registry)}
            self.events = Counter("tokenmill_guard_events", "the training guard's events", ["kind"], registry=registry)
            self.loader_gauge = Gauge("tokenmill_loader", "the loader's counters (rank 0)", ["counter"],
                                      registry=registry)
            start_http_server(cfg.prometheus_port, registry=registry)
            log.info("Prometheus metrics on port %d", cfg.prometheus_port)

    def step(self, record: dict) -> None:
        step = record["step"]
        for key in STEP_FIGURES:
            value = record.get(key)
            if value is None or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            if self.writer is not None:
                self.writer.add_scalar(f"train/{key}", value, step)
            if key in self.gauges:
                self.gauges[key].set(value)
        if self.gauges:
            self.step_gauge.set(step)

    def heldout(self, step: int, figures: dict) -> None:
        for source, f in figures.items():
            for key in ("loss", "bits_per_byte"):
                if key not in f or not math.isfinite(f[key]):
                    continue
                if self.writer is not None:
                    self.writer.add_scalar(f"heldout/{source}/{key}", f[key], step)
                if self.heldout_gauges:
                    self.heldout_gauges[key].labels(source=source).set(f[key])

    def event(self, kind: str, step: int) -> None:
        if self.writer is not None:
            self.writer.add_scalar(f"guard/{kind}", 1, step)
        if self.events is not None:
            self.events.labels(kind=kind).inc()

    def loader(self, stats: dict, step: int) -> None:
        numbers = {k: v for k, v in stats.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        for key, value in numbers.items():
            if self.writer is not None:
                self.writer.add_scalar(f"loader/{key}", value, step)
            if self.loader_gauge is not None:
                self.loader_gauge.labels(counter=key).set(value)

    def close(self) -> None:
        if self.events is not None:
            test_hooks.hold_endpoint()
        if self.writer is not None:
            self.writer.close()
