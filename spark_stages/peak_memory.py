"""Peak resident memory of the job's process tree on this machine, sampled from /proc in a background
thread: what a machine must have to run the job. Under `python -m` the tree is this process, the
JVM it started and Spark's Python workers; under spark-submit the JVM is this process's parent, so
the tree starts there."""

import os
import threading
from pathlib import Path

from spark_stages.session import launched_by_spark_submit

PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(root: int) -> int:
    """Bytes resident in `root` and its descendants now (0 where /proc is not available)."""
    return sum(rss for _, rss in process_tree(root))


def tree_pss(root: int) -> int:
    """Proportional set size of the tree: pages shared by n processes (shared memory, libraries)
    count 1/n in each, so a node-wide cache counts once, not once per process mapping it."""
    total = 0
    for pid, _ in process_tree(root):
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) * 1024 for line in rollup.splitlines() if line.startswith("Pss:"))
    return total


def process_tree(root: int) -> list[tuple[int, int]]:
    """(pid, resident bytes) of `root` and its descendants."""
    parents, rss = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        pid = int(stat.parent.name)
        parents[pid], rss[pid] = int(fields[1]), int(fields[21]) * PAGE
    found, stack = [], [root]
    children = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    while stack:
        pid = stack.pop()
        if pid in rss:
            found.append((pid, rss[pid]))
        stack.extend(children.get(pid, []))
    return found


class PeakMemory:
    """with PeakMemory() as peak: ...; peak.bytes is the highest tree RSS (or `measure`) seen, every `interval` s."""

    def __init__(self, interval: float = 0.5, measure=tree_rss):
        self.interval, self.bytes, self.measure = interval, 0, measure
        self.root = os.getppid() if launched_by_spark_submit() else os.getpid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while True:
            self.bytes = max(self.bytes, self.measure(self.root))
            if self._stop.wait(self.interval):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.bytes = max(self.bytes, self.measure(self.root))
