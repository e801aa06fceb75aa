"""L3 in worker processes: `num_workers` processes decompress shards ahead of need into L2.

Batches never travel between processes: the loader's own process reads rows straight out of the
node-wide arena, so workers only take decompression (and the checksum) off its cores. Each worker is
`python -m loaders.fetch_workers` reading shard numbers from its stdin: no fork of a process that
runs threads and torch, no re-import of the user's main script (multiprocessing's spawn does that),
and a worker ends by itself when its loader's process dies (its stdin closes).
"""

import functools
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

from loaders.shard_reader import ShardSource, read_shard
from loaders.shm_arena import SharedArena, arena_key

PROJECT_ROOT = Path(__file__).resolve().parents[1]


class FetchWorkers:
    """The same request()/close() as the thread Prefetcher, in processes (requests go round robin)."""

    def __init__(self, location: str, cache_dir: str | None, folder: Path, capacity: int, workers: int,
                 claim_timeout: float):
        config = json.dumps({"location": location, "cache_dir": cache_dir, "folder": str(folder), "capacity": capacity,
                             "claim_timeout": claim_timeout})
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                                          os.environ.get("PYTHONPATH")]))}
        self.processes = [subprocess.Popen([sys.executable, "-m", "loaders.fetch_workers", config], env=env,
                                           stdin=subprocess.PIPE, text=True) for _ in range(workers)]
        self._next = itertools.cycle(self.processes)
        self.decompressed: list[int] = []  # workers' decompressions show in the arena's node-wide count

    def request(self, shard: int) -> None:
        worker = next(self._next)
        if worker.poll() is None:
            worker.stdin.write(f"{shard}\n")
            worker.stdin.flush()

    def close(self) -> None:
        for worker in self.processes:
            if worker.poll() is None:
                worker.stdin.close()
        for worker in self.processes:
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()


def work(config: dict) -> None:
    source = ShardSource(config["location"], config["cache_dir"])
    arena = SharedArena(arena_key(source.location, source.index), len(source.entries), config["capacity"],
                        Path(config["folder"]), config["claim_timeout"])
    try:
        for line in sys.stdin:  # ends when the loader closes the pipe or dies
            shard = int(line)
            try:
                arena.fill(shard, functools.partial(read_shard, source, shard))
            except Exception:  # the loader raises the same error when it needs this shard
                continue
    finally:
        arena.close()


if __name__ == "__main__":
    work(json.loads(sys.argv[1]))
