"""Peak resident memory of the job's process tree on this machine, sampled from /proc in a background
thread: what a machine must have to run the job. Under `python -m` the tree is this process, the
JVM it started and Spark's Python workers; under spark-submit the JVM is this process's parent, so
the tree starts there."""

import os
import threading
from pathlib import Path

from jobs.spark_session import launched_by_spark_submit

PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(root: int) -> int:
    """Bytes resident in `root` and its descendants now (0 where /proc is not available)."""
    parents, rss = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        pid = int(stat.parent.name)
        parents[pid], rss[pid] = int(fields[1]), int(fields[21]) * PAGE
    total, stack = 0, [root]
    children = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


class PeakMemory:
    """with PeakMemory() as peak: ...; peak.bytes is the highest tree RSS seen (every `interval` s)."""

    def __init__(self, interval: float = 0.5):
        self.interval, self.bytes = interval, 0
        self.root = os.getppid() if launched_by_spark_submit() else os.getpid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while True:
            self.bytes = max(self.bytes, tree_rss(self.root))
            if self._stop.wait(self.interval):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.bytes = max(self.bytes, tree_rss(self.root))
