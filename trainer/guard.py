"""The training guard: a step whose loss or gradient is not finite applies nothing; a loss spike rolls the
run back to its last checkpoint and skips the stretch of data that led to it.

A spike is a loss above the median of the last five applied steps by more than `spike_mads` times the
median step-to-step change over the last `window` applied steps, and by at least `spike_rise` nats
(both: a flat loss has tiny changes), judged once `warmup` steps are applied. Step-to-step changes,
not the spread of the losses: a loss that falls fast early on has a wide spread and small changes.
The guard decides from the global loss and gradient norm, which every rank has: every rank decides
the same. On a spike the loop restores the newest checkpoint (on every rank),
and the loader skips the spiking batch and the `skip_before` batches before it (never those before the
checkpoint: they are in its weights already), as PaLM and OPT restarted from before a spike and skipped
its batches by hand. More than `max_rollbacks` rollbacks within `rollback_window` steps stop the run with
one line. The guard's state (the recent losses, the counts, the rollbacks) is part of each checkpoint and
the skips are part of the loader's, so a run resumed after a skip goes on exactly as the one that skipped.
"""

import json
import math
import statistics
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GuardConfig:
    """When a step is not applied, and when the run goes back to its last checkpoint."""
    enabled: bool = True  # skip non-finite steps; roll back and skip the data after a loss spike
    window: int = 32  # applied steps the spike statistic is over
    warmup: int = 16  # applied steps before a spike is judged (the loss falls fast at first)
    spike_mads: float = 8.0  # a spike: the loss above the last five's median by this many median changes ...
    spike_rise: float = 0.5  # ... and by at least this many nats
    skip_before: int = 4  # batches before the spiking one skipped with it
    max_rollbacks: int = 3  # more rollbacks than this within rollback_window steps stop the run
    rollback_window: int = 1000  # steps over which rollbacks are counted

    def __post_init__(self):
        if self.window < 4 or not 1 <= self.warmup <= self.window or self.spike_mads <= 0 or self.spike_rise < 0 \
                or self.skip_before < 0 or self.max_rollbacks < 0 or self.rollback_window < 1:
            raise ValueError("need window >= 4, 1 <= warmup <= window (the window holds what warmup waits for), "
                             "spike_mads > 0, spike_rise >= 0, skip_before >= 0, max_rollbacks >= 0, "
                             "rollback_window >= 1")


class TooManyRollbacks(RuntimeError):
    """The run keeps spiking: it stops rather than loop."""


@dataclass
class GuardState:
    recent: list[float] = field(default_factory=list)  # losses of the last `window` applied steps
    nonfinite: int = 0  # steps not applied for a non-finite loss or gradient
    spikes: int = 0
    rollbacks: list[int] = field(default_factory=list)  # the steps at which the run rolled back

    def to_json(self) -> str:
        return json.dumps({"recent": self.recent, "nonfinite": self.nonfinite, "spikes": self.spikes,
                           "rollbacks": self.rollbacks})

    @classmethod
    def from_json(cls, text: str) -> "GuardState":
        if not text:  # a checkpoint from before the guard
            return cls()
        data = json.loads(text)
        return cls([float(x) for x in data["recent"]], int(data["nonfinite"]), int(data["spikes"]),
                   [int(x) for x in data["rollbacks"]])


class Guard:
    def __init__(self, cfg: GuardConfig):
        self.cfg, self.state = cfg, GuardState()

    def verdict(self, loss: float) -> str | None:
        """Before anything is applied: "nonfinite", "spike" or None (go on)."""
        if not self.cfg.enabled:
            return None
        if not math.isfinite(loss):
            return "nonfinite"
        recent = self.state.recent
        if len(recent) < max(4, self.cfg.warmup):
            return None
        baseline = statistics.median(recent[-5:])
        change = statistics.median(abs(b - a) for a, b in zip(recent, recent[1:]))
        if loss - baseline > max(self.cfg.spike_mads * change, self.cfg.spike_rise):
            return "spike"
        return None

    def gradient_ok(self, grad_norm: float) -> bool:
        return not self.cfg.enabled or math.isfinite(grad_norm)

    def applied(self, loss: float) -> None:
        self.state.recent = (self.state.recent + [loss])[-self.cfg.window:]

    def not_applied(self) -> None:
        self.state.nonfinite += 1

    def rollback(self, step: int) -> None:
        """Counts a rollback at `step`; TooManyRollbacks past the limit."""
        self.state.spikes += 1
        self.state.rollbacks.append(step)
        inside = [s for s in self.state.rollbacks if s > step - self.cfg.rollback_window]
        if len(inside) > self.cfg.max_rollbacks:
            raise TooManyRollbacks(f"{len(inside)} loss spikes rolled the run back within {self.cfg.rollback_window} "
                                   f"steps (at steps {', '.join(map(str, inside))}): stopping (guard.max_rollbacks "
                                   f"{self.cfg.max_rollbacks}); look at the data after the last checkpoint or lower lr")

    def restore(self, saved: GuardState) -> None:
        """The recent losses of a checkpoint rolled back to; this run's counts and rollbacks go on."""
        self.state.recent = list(saved.recent)

    def skip_stretch(self, served: int, checkpoint_position: int, batch: int) -> tuple[int, int]:
        """The global positions to skip for a spike on the batch served at `served`."""
        return max(checkpoint_position, served - self.cfg.skip_before * batch), served + batch
