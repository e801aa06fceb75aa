"""Slow ranks named: the straggler that holds up every collective of every step.

A rank's step time is the same on every rank (each collective waits for the last rank to arrive), so
what the ranks compare is each one's own work: its wait for data and its blocks' forward compute, timed
inside FSDP's gathers (a forward hook after FSDP's pre-forward, which has waited for the all-gather;
on CUDA with events on the compute stream, so the kernels are timed, not their launch). A slow device
is as slow in backward, which cannot be timed apart from the reduce-scatters it waits for. Every
`every` steps the ranks all-gather their mean busy time and data wait per step since the last check; a
rank slower than the median of the other ranks by more than `slower_share` for `checks` checks in a row
is reported by rank and host (an event line, a metric, the dashboards), once per streak. The others'
median, not everyone's: with two ranks everyone's median is halfway to the slow one, which hid a rank 30%
slower than its peer at a 20% share.
"""

import statistics
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class StragglerConfig:
    """How slow ranks are found."""
    every: int = 50  # steps between two comparisons of the ranks' busy time (0: never)
    slower_share: float = 0.2  # a rank slower than the median by more than this share is slow ...
    checks: int = 3  # ... when it is so this many comparisons in a row

    def __post_init__(self):
        if self.every < 0 or self.slower_share <= 0 or self.checks < 1:
            raise ValueError(f"need every >= 0, slower_share > 0, checks >= 1, got {self.every}, "
                             f"{self.slower_share}, {self.checks}")


def others_medians(busy: list[float]) -> list[float]:
    """Per rank, the median busy time of the other ranks (its own for a rank alone)."""
    return [statistics.median(busy[:rank] + busy[rank + 1:]) if len(busy) > 1 else seconds
            for rank, seconds in enumerate(busy)]


def slower_than_the_others(busy: list[float], share: float) -> list[bool]:
    """Per rank, whether its busy time is above the median of the other ranks' by more than `share`."""
    return [seconds > others * (1 + share) for seconds, others in zip(busy, others_medians(busy))]


MAX_PENDING_EVENTS = 1024  # CUDA event pairs held before the finished ones are summed


class ForwardTimer:
    """The forward compute of the model's blocks, summed while `recording`."""

    def __init__(self, blocks, device: torch.device):
        self.cuda = device.type == "cuda"
        self.recording, self.seconds, self.events, self.started = False, 0.0, [], None
        for block in blocks:
            block.register_forward_pre_hook(self._start)
            block.register_forward_hook(self._stop)

    def _start(self, *_):
        if self.recording:
            self.started = torch.cuda.Event(enable_timing=True) if self.cuda else time.perf_counter()
            if self.cuda:
                self.started.record()

    def _stop(self, *_):
        if not self.recording or self.started is None:
            return
        if self.cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self.events.append((self.started, end))
            if len(self.events) > MAX_PENDING_EVENTS:  # held to the next comparison, a run of 16k steps of
                self._fold_finished()                   # 16 blocks between two had held 256k pairs
        else:
            self.seconds += time.perf_counter() - self.started
        self.started = None

    def _fold_finished(self) -> None:
        """The pairs whose end the device has reached, summed into `seconds` and let go (no wait)."""
        done = 0
        while done < len(self.events) and self.events[done][1].query():
            done += 1
        self.seconds += sum(start.elapsed_time(end) for start, end in self.events[:done]) / 1000
        del self.events[:done]

    def take(self) -> float:
        """The seconds recorded since the last take (on CUDA: waits for the events)."""
        if self.events:
            self.events[-1][1].synchronize()
            self.seconds += sum(start.elapsed_time(end) for start, end in self.events) / 1000
            self.events.clear()
        seconds, self.seconds = self.seconds, 0.0
        return seconds


class Stragglers:
    """The ranks' busy times, compared every cfg.every steps (every rank calls `step` and `due` alike)."""

    def __init__(self, cfg: StragglerConfig, hosts: list[str], device: torch.device):
        self.cfg, self.hosts, self.device = cfg, hosts, device
        self.busy, self.data_wait, self.steps = 0.0, 0.0, 0
        self.streaks = [0] * len(hosts)

    def step(self, data_wait: float, timer: ForwardTimer, step: int) -> dict | None:
        """Adds a step's data wait (the timer has its forward compute); on a check step returns the
        comparison: per rank its busy seconds and data wait per step, and the ranks newly found slow."""
        if not self.cfg.every:
            return None
        self.data_wait += data_wait
        self.busy += data_wait
        self.steps += 1
        if step % self.cfg.every:
            return None
        mine = torch.tensor([(self.busy + timer.take()) / self.steps, self.data_wait / self.steps],
                            dtype=torch.float64, device=self.device)
        everyone = [torch.zeros_like(mine) for _ in self.hosts]
        dist.all_gather(everyone, mine)
        busy = [float(t[0]) for t in everyone]
        waits = [float(t[1]) for t in everyone]
        self.busy, self.data_wait, self.steps = 0.0, 0.0, 0
        median = statistics.median(busy)
        slow, newly = [], []
        for rank, slower in enumerate(slower_than_the_others(busy, self.cfg.slower_share)):
            self.streaks[rank] = self.streaks[rank] + 1 if slower else 0
            if self.streaks[rank] >= self.cfg.checks:
                slow.append(rank)
            if self.streaks[rank] == self.cfg.checks:
                newly.append(rank)
        return {"busy_s": busy, "data_wait_s": waits, "median_busy_s": median, "others_median_busy_s":
                others_medians(busy), "slow": slow, "newly_slow": newly}
