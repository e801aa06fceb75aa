"""Dashboards of a run, on rank 0: TensorBoard event files in DIR/tensorboard/ and a Prometheus endpoint.

Every step's figures (loss, learning rate, gradient norm, tokens/s, MFU, step seconds, data wait in
milliseconds, checkpoint save seconds), the held-out loss and bits per byte by source, benchmark accuracy
with its standard error by benchmark and measure, each rank's busy time and data wait and whether it is
slow (by rank and host), the guard's events and the loader's counters go to both. The endpoint
(`prometheus_port`, 0 for none) serves them as gauges and counters named tokenmill_*;
dashboards/grafana.json is a Grafana dashboard of them. The endpoint listens on 127.0.0.1 unless
`prometheus_addr` says otherwise (a run's figures are nobody else's business on a shared network) and
answers /metrics only (prometheus_client's own server answers every path).
"""

import contextlib
import logging
import math
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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
    prometheus_addr: str = "127.0.0.1"  # the address the endpoint listens on (0.0.0.0: every network of the host)

    def __post_init__(self):
        if not 0 <= self.prometheus_port < 65536:
            raise ValueError(f"prometheus_port must be a port number, got {self.prometheus_port}")
        if not self.prometheus_addr.strip():
            raise ValueError("prometheus_addr must be an address (127.0.0.1, 0.0.0.0, a host name), got ''")


class _MetricsHandler(BaseHTTPRequestHandler):
    """GET /metrics: the registry's figures in Prometheus' text format; any other path: 404. A connection
    silent for `timeout` seconds is closed (an idle one had held a thread and a file of the run for good)."""
    timeout = 10

    def do_GET(self):  # the name http.server calls
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if self.path.partition("?")[0] != "/metrics":  # a query is allowed, as prometheus_client allows it
            self.send_error(404)
            return
        body = generate_latest(self.server.registry)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # no console line per scrape
        pass


class MetricsServer(ThreadingHTTPServer):
    """A registry served on addr:port from a daemon thread, until shutdown(). Anyone on the node can connect:
    at most MAX_CONNECTIONS at once (each a thread; more are closed at once), none longer than the handler's
    timeout in silence, and a client that goes away is no traceback in the run's log."""
    daemon_threads = True  # a scrape in progress never holds up the run's exit
    MAX_CONNECTIONS = 8  # a Prometheus server scrapes with one; a few of them, and a person with curl

    def __init__(self, registry, addr: str, port: int):
        self.registry = registry
        self._slots = threading.BoundedSemaphore(self.MAX_CONNECTIONS)
        try:
            self.address_family = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)[0][0]  # IPv4, IPv6, a name
            super().__init__((addr, port), _MetricsHandler)
        except OSError as e:  # "[Errno 98] Address already in use" had named neither
            raise OSError(f"the Prometheus endpoint on {addr}:{port}: {e.strerror or e}") from None
        threading.Thread(target=self.serve_forever, name="prometheus-endpoint", daemon=True).start()

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):  # 1,600 idle connections had been 1,600 threads and files
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, _request, client_address):  # a reset or a timeout: the client's, not the run's
        log.debug("Prometheus endpoint: a request from %s failed", client_address, exc_info=True)


class Dashboards:
    def __init__(self, cfg: DashboardConfig, run_dir: Path):
        self.writer, self.gauges, self.events, self.loader_gauge, self.heldout_gauges = None, {}, None, None, None
        self.server, self.benchmark_gauges, self.rank_gauges = None, None, None
        if cfg.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(run_dir / "tensorboard"))
        if cfg.prometheus_port:
            from prometheus_client import CollectorRegistry, Counter, Gauge

            self.registry = registry = CollectorRegistry()  # the run's own: no process-wide default collectors
            # each made at its first value: made at once, one never set (MFU off CUDA) was served as 0
            self.gauges = dict.fromkeys(STEP_FIGURES)
            self.step_gauge = Gauge("tokenmill_step", "the last step done", registry=registry)
            self.heldout_gauges = {
                "loss": Gauge("tokenmill_heldout_loss", "held-out loss per token", ["source"], registry=registry),
                "bits_per_byte": Gauge("tokenmill_heldout_bits_per_byte", "held-out bits per byte", ["source"],
                                       registry=registry)}
            self.events = Counter("tokenmill_guard_events", "the training guard's events", ["kind"], registry=registry)
            self.loader_gauge = Gauge("tokenmill_loader", "the loader's counters (rank 0)", ["counter"],
                                      registry=registry)
            self.benchmark_gauges = {
                "": Gauge("tokenmill_benchmark_accuracy", "benchmark accuracy", ["benchmark", "measure"],
                          registry=registry),
                "_se": Gauge("tokenmill_benchmark_accuracy_stderr", "its standard error", ["benchmark", "measure"],
                             registry=registry)}
            self.rank_gauges = {
                "busy_s": Gauge("tokenmill_rank_busy_seconds", "a rank's own work per step (data wait, forward, "
                                "optimizer)", ["rank", "host"], registry=registry),
                "data_wait_s": Gauge("tokenmill_rank_data_wait_seconds", "a rank's data wait per step",
                                     ["rank", "host"], registry=registry),
                "slow": Gauge("tokenmill_rank_slow", "1 while a rank is slow (stragglers.*)", ["rank", "host"],
                              registry=registry)}
            self.server = MetricsServer(registry, cfg.prometheus_addr, cfg.prometheus_port)
            log.info("Prometheus metrics on http://%s:%d/metrics", cfg.prometheus_addr, cfg.prometheus_port)

    def _scalar(self, tag: str, value: float, step: int) -> None:
        """A TensorBoard scalar; TensorBoard off, with a warning, once its files cannot be written (a full disk
        had stopped the run with a traceback from its writer's thread)."""
        if self.writer is None:
            return
        try:
            self.writer.add_scalar(tag, value, step)
        except OSError as e:
            log.warning("TensorBoard off from step %d: its event file cannot be written (%s)", step, e)
            writer, self.writer = self.writer, None
            with contextlib.suppress(OSError):
                writer.close()

    def step(self, record: dict) -> None:
        step = record["step"]
        for key in STEP_FIGURES:
            value = record.get(key)
            if value is None or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            self._scalar(f"train/{key}", value, step)
            if key in self.gauges:
                if self.gauges[key] is None:
                    from prometheus_client import Gauge

                    self.gauges[key] = Gauge(*STEP_FIGURES[key], registry=self.registry)
                self.gauges[key].set(value)
        if self.gauges:
            self.step_gauge.set(step)

    def heldout(self, step: int, figures: dict) -> None:
        for source, f in figures.items():
            for key in ("loss", "bits_per_byte"):
                if key not in f or not math.isfinite(f[key]):
                    continue
                self._scalar(f"heldout/{source}/{key}", f[key], step)
                if self.heldout_gauges:
                    self.heldout_gauges[key].labels(source=source).set(f[key])

    def benchmarks(self, step: int, figures: dict) -> None:
        for name, f in figures.items():
            for measure in ("acc", "acc_norm", "acc_per_token"):
                for suffix in ("", "_se"):
                    value = f[measure + suffix]
                    if not math.isfinite(value):
                        continue
                    self._scalar(f"benchmarks/{name}/{measure}{suffix}", value, step)
                    if self.benchmark_gauges:
                        self.benchmark_gauges[suffix].labels(benchmark=name, measure=measure).set(value)

    def ranks(self, step: int, compared: dict, hosts: list[str]) -> None:
        for rank, host in enumerate(hosts):
            figures = {"busy_s": compared["busy_s"][rank], "data_wait_s": compared["data_wait_s"][rank],
                       "slow": float(rank in compared["slow"])}
            for key, value in figures.items():
                self._scalar(f"ranks/{key}/rank{rank}", value, step)
                if self.rank_gauges:
                    self.rank_gauges[key].labels(rank=str(rank), host=host).set(value)

    def event(self, kind: str, step: int) -> None:
        self._scalar(f"guard/{kind}", 1, step)
        if self.events is not None:
            self.events.labels(kind=kind).inc()

    def loader(self, stats: dict, step: int) -> None:
        numbers = {k: v for k, v in stats.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        for key, value in numbers.items():
            self._scalar(f"loader/{key}", value, step)
            if self.loader_gauge is not None:
                self.loader_gauge.labels(counter=key).set(value)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.writer is not None:
            with contextlib.suppress(OSError):  # a full disk: what was written stays
                self.writer.close()
