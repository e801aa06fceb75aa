"""The training guard: a step whose loss or gradient is not finite applies nothing; a loss spike rolls the
run back to its last checkpoint, and then either skips the stretch of bad data that caused it, however long,
or replays the steps with a lowered learning rate when the data was not to blame. `max_nonfinite` steps in a
row that are not finite are a spike too: broken weights make every step after them non-finite (and the
trainer saves no checkpoint of weights that are not finite), a stretch of data that overflows is skipped.

A spike is a loss above the median of the last five applied steps by more than `spike_mads` times the
median step-to-step change over the last `window` applied steps, and by at least `spike_rise` nats
(both: a flat loss has tiny changes), judged once `warmup` steps are applied. Step-to-step changes,
not the spread of the losses: a loss that falls fast early on has a wide spread and small changes.
Every rank decides from the global loss and gradient norm, so every rank decides the same.

Data or optimizer? Two forward passes, nothing applied. Before the rollback, the last applied batch on
the weights that spiked: an optimizer instability breaks the weights, so a batch they were just trained on
scores far above its loss (the spike rule, against the losses before the spike); a bad batch leaves them
sound. After it, the spiking batch on the restored weights: still far (against the losses before the
checkpoint) is bad data. A spike is blamed on the optimizer only when the weights were broken and the
batch is normal on the restored ones; either alone misleads: right after an early checkpoint, random
tokens score on the barely trained restored weights much as text does, and were then replayed and
trained on. An instability is replayed with the learning rate times `calm_lr_factor` until `calm_steps`
past the spike, then ramped back over `calm_ramp_steps` (a second instability inside that window lowers
it again). A batch that spikes again after such a replay is bad data after all.

A bad stretch of data runs forward (a broken shard, a crawl of one spam site), and each rollback costs a
checkpoint interval of compute. So after a data spike at batch p the loop probes the batches after it,
forward only (`probe_batches` at most): p+1, p+2, p+4, ... until one is clean, then halves the gap to the
first clean one. It probes on the weights that spiked when they were sound (judged against the losses
before the spike: those weights, trained furthest, tell a bad batch best), else on the restored ones. A
stretch of B batches costs one rollback and about 2 log2(B) forward passes, and skips no clean batch when
the stretch is contiguous. Should a spike come again right
after a skipped stretch (within its width: the probes judged wrong, or were off), the next skip is at
least twice as wide as the last: B batches then cost O(log B) rollbacks, whatever the probes say. More than
`max_rollbacks` rollbacks within `rollback_window` steps stop the run with one line.

The guard's state (recent losses, counts, the last skip, the lowered learning rate) is part of each
checkpoint (state_dict) and the skips are part of the loader's, so a run resumed after any repair goes on
exactly as the one that repaired.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

# applied steps the spike statistic is over, at most: its median is of the window's changes at every step
# (10**12 was taken, and 20,000 steps spent 43 s in the guard against 0.09 s at the default)
MAX_WINDOW = 10_000


@dataclass(frozen=True)
class GuardConfig:
    """When a step is not applied, when the run goes back to its last checkpoint, and what it does then."""
    enabled: bool = True  # skip non-finite steps; roll back after a loss spike
    window: int = 32  # applied steps the spike statistic is over
    warmup: int = 16  # applied steps before a spike is judged (the loss falls fast at first)
    spike_mads: float = 8.0  # a spike: the loss above the last five's median by this many median changes ...
    spike_rise: float = 0.5  # ... and by at least this many nats
    skip_before: int = 0  # batches before a bad one skipped with it (PaLM skipped hundreds by hand)
    diagnose: bool = True  # tell bad data from an optimizer instability (false: every spike is bad data)
    probe_batches: int = 16  # forward passes per rollback to find where bad data ends (0: doubling alone)
    calm_lr_factor: float = 0.25  # after an optimizer instability the learning rate is times this ...
    calm_steps: int = 20  # ... from the checkpoint until this many steps past the spike ...
    calm_ramp_steps: int = 20  # ... then back to the schedule linearly over this many steps
    # non-finite steps in a row taken as a spike (a rollback): the weights are broken (every step after is
    # non-finite, and the run went on applying nothing and saving the broken weights over the sound ones),
    # or a stretch of data overflows (skipped as bad data)
    max_nonfinite: int = 8
    max_rollbacks: int = 8  # more rollbacks than this within rollback_window steps stop the run
    rollback_window: int = 1000  # steps over which rollbacks are counted

    def __post_init__(self):
        if not 4 <= self.window <= MAX_WINDOW or not 1 <= self.warmup <= self.window or self.spike_mads <= 0 \
                or self.spike_rise < 0 or self.skip_before < 0 or self.max_rollbacks < 0 or self.rollback_window < 1 \
                or self.probe_batches < 0 or not 0 < self.calm_lr_factor <= 1 or self.calm_steps < 0 \
                or self.calm_ramp_steps < 0 or self.max_nonfinite < 1:
            raise ValueError(f"need window in 4-{MAX_WINDOW}, 1 <= warmup <= window (the window holds what warmup "
                             "waits for), "
                             "spike_mads > 0, spike_rise >= 0, skip_before >= 0, max_rollbacks >= 0, "
                             "rollback_window >= 1, probe_batches >= 0, 0 < calm_lr_factor <= 1, calm_steps >= 0, "
                             "calm_ramp_steps >= 0, max_nonfinite >= 1")


class TooManyRollbacks(RuntimeError):
    """The run keeps spiking: it stops rather than loop."""


class Guard:
    def __init__(self, cfg: GuardConfig):
        self.cfg = cfg
        self.recent: list[float] = []  # losses of the last `window` applied steps
        self.nonfinite = 0  # steps not applied for a non-finite loss or gradient
        # of them, those since the last applied step or rollback (not in a checkpoint: a resume counts afresh)
        self.nonfinite_in_a_row = 0
        self.rollbacks: list[int] = []  # the steps at which the run rolled back
        self.data_spikes = 0  # rollbacks blamed on the data (a stretch skipped)
        self.instabilities = 0  # rollbacks blamed on the optimizer (replayed with a lower learning rate)
        self.last_skip: list[int] = []  # [start, end, width in batches] of the last stretch skipped
        self.calm: list[float] = []  # [first step, until, ramp end, factor] of the lowered learning rate
        self.unstable_at = -1  # the data position of the last spike blamed on the optimizer

    # -- spikes -------------------------------------------------------------------------------------------------

    def verdict(self, loss: float) -> str | None:
        """Before anything is applied: "nonfinite", "spike" or None (go on)."""
        if not self.cfg.enabled:
            return None
        if not math.isfinite(loss):
            return self.nonfinite_verdict()
        if len(self.recent) < max(4, self.cfg.warmup):
            return None
        return "spike" if self.far(loss, self.recent) else None

    def far(self, loss: float, window: list[float]) -> bool:
        """Whether `loss` is a spike against `window` (recent losses, oldest first)."""
        if not math.isfinite(loss):
            return True
        if not window:
            return False
        baseline = statistics.median(window[-5:])
        change = statistics.median(abs(b - a) for a, b in zip(window, window[1:])) if len(window) > 1 else 0.0
        return loss - baseline > max(self.cfg.spike_mads * change, self.cfg.spike_rise)

    def reference(self, restored: list[float], before: list[float]) -> list[float]:
        """The losses a batch on the restored weights is judged against: those before the checkpoint (the
        weights' own), unless it holds too few (a checkpoint early in the run): then those before the spike."""
        return restored if len(restored) >= 4 else before

    def blame(self, probe_loss: float, reference: list[float], weights_loss: float | None, before: list[float],
              served: int) -> str:
        """"data" or "optimizer" for the spike of the batch at `served`: `probe_loss` is that batch on the
        restored weights (judged against `reference`), `weights_loss` the last applied batch on the weights
        that spiked (judged against `before`, the losses the spike was; None: there was none)."""
        if not self.cfg.diagnose or self.replayed(served) or self.far(probe_loss, reference):
            return "data"
        broken = weights_loss is not None and self.far(weights_loss, before)
        return "optimizer" if broken else "data"

    def nonfinite_verdict(self) -> str:
        """A step that is not finite: "nonfinite" (not applied), or "spike" when it is the max_nonfinite-th
        in a row."""
        return "spike" if self.nonfinite_in_a_row + 1 >= self.cfg.max_nonfinite else "nonfinite"

    def gradient_ok(self, grad_norm: float) -> bool:
        return not self.cfg.enabled or math.isfinite(grad_norm)

    def applied(self, loss: float) -> None:
        self.recent = (self.recent + [loss])[-self.cfg.window:]
        self.nonfinite_in_a_row = 0

    def not_applied(self) -> None:
        self.nonfinite += 1
        self.nonfinite_in_a_row += 1

    def count_rollback(self, step: int) -> None:
        """Counts a rollback at `step`; TooManyRollbacks past the limit."""
        self.rollbacks.append(step)
        self.nonfinite_in_a_row = 0
        inside = [s for s in self.rollbacks if s > step - self.cfg.rollback_window]
        if len(inside) > self.cfg.max_rollbacks:
            raise TooManyRollbacks(f"{len(inside)} loss spikes rolled the run back within {self.cfg.rollback_window} "
                                   f"steps (at steps {', '.join(map(str, inside))}): stopping (guard.max_rollbacks "
                                   f"{self.cfg.max_rollbacks}); look at the data after the last checkpoint or lower lr")

    # -- bad data -----------------------------------------------------------------------------------------------

    def skip_floor(self, served: int, batch: int) -> int:
        """The fewest batches to skip from `served`: twice the last skip's when the spike came again right
        after it (within its width), else one."""
        if self.last_skip:
            _, end, width = self.last_skip
            if end <= served < end + width * batch:
                return 2 * width
        return 1

    def stretch_end(self, served: int, batch: int, floor: int,
                    bad: Callable[[int], bool]) -> tuple[int, list[tuple[int, bool]]]:
        """(the end of the bad stretch that starts at `served`, at least `floor` batches on; the positions
        probed with `bad(position)` and its answers). Probes forward, doubling the offset, until a batch is
        clean, then halves the gap; at most probe_batches calls of `bad`."""
        probed: list[tuple[int, bool]] = []

        def probe(offset: int) -> bool:
            probed.append((served + offset * batch, bad(served + offset * batch)))
            return probed[-1][1]

        known_bad, offset = 0, floor
        while True:
            if len(probed) >= self.cfg.probe_batches:
                return served + offset * batch, probed  # out of probes: the next doubling, untested
            if not probe(offset):
                break
            known_bad, offset = offset, 2 * offset
        clean = offset
        while clean - known_bad > 1 and len(probed) < self.cfg.probe_batches:
            middle = (known_bad + clean) // 2
            if middle < floor:  # the floor is skipped whatever the probes say
                break
            if probe(middle):
                known_bad = middle
            else:
                clean = middle
        return served + clean * batch, probed

    def skipped(self, start: int, end: int, batch: int) -> None:
        self.data_spikes += 1
        self.last_skip = [start, end, (end - start) // batch]

    # -- optimizer instabilities --------------------------------------------------------------------------------

    def replayed(self, served: int) -> bool:
        """Whether the batch at `served` spiked before, was blamed on the optimizer, and spiked again at the
        lowered rate: then it is the data after all (it spikes only on weights near these)."""
        return served == self.unstable_at

    def calm_down(self, first: int, spike: int, served: int) -> float:
        """A lowered learning rate from step index `first` (the restored checkpoint's) until calm_steps past
        the spike's, then a ramp back; lower again when the spike came while it was lowered. Returns it."""
        factor = self.lr_factor(spike) * self.cfg.calm_lr_factor
        until = spike + self.cfg.calm_steps
        self.calm = [first, until, until + self.cfg.calm_ramp_steps, factor]
        self.instabilities += 1
        self.unstable_at = served
        return factor

    def lr_factor(self, step: int) -> float:
        """The factor on the scheduled learning rate of step index `step` (0 for the first step)."""
        if not self.calm:
            return 1.0
        first, until, ramp_end, factor = self.calm
        if step < first or step >= ramp_end:
            return 1.0
        if step < until:
            return factor
        return factor + (1 - factor) * (step - until + 1) / (ramp_end - until + 1)

    # -- state --------------------------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Plain numbers and flat lists (DCP stores each as one entry, whatever its length)."""
        return {"recent": list(self.recent), "nonfinite": self.nonfinite, "rollbacks": list(self.rollbacks),
                "data_spikes": self.data_spikes, "instabilities": self.instabilities,
                "last_skip": list(self.last_skip), "calm": list(self.calm), "unstable_at": self.unstable_at}

    def load_state_dict(self, state: dict) -> None:
        self.recent = [float(x) for x in state["recent"]]
        self.nonfinite, self.data_spikes = int(state["nonfinite"]), int(state["data_spikes"])
        self.instabilities = int(state["instabilities"])
        self.rollbacks = [int(x) for x in state["rollbacks"]]
        self.last_skip = [int(x) for x in state["last_skip"]]
        self.calm = [float(x) for x in state["calm"]]
        self.unstable_at = int(state["unstable_at"])

    def restore_recent(self, state: dict) -> None:
        """The recent losses of a checkpoint rolled back to; this run's counts, skips and rates go on."""
        self.recent = [float(x) for x in state["recent"]]
