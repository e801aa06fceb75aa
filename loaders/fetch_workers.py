"""L3 in worker processes: `num_workers` processes decompress shards ahead of need into L2.

Batches never travel between processes: the loader's own process reads rows straight out of the
node-wide arena, so workers only take decompression (and the checksum) off its cores. Spawned, not
forked (the parent runs threads and torch); they import no torch and exit when the parent dies.
"""

import multiprocessing
import os
import queue
from pathlib import Path

from loaders.shard_reader import ShardSource, read_shard
from loaders.shm_arena import SharedArena, arena_key


class FetchWorkers:
    """The same request()/close() as the thread Prefetcher, in processes."""

    def __init__(self, location: str, cache_dir: str | None, folder: Path, capacity: int, workers: int):
        context = multiprocessing.get_context("spawn")
        self.requests = context.Queue()
        self.decompressed: list[int] = []  # workers' decompressions show in the arena's node-wide count
        self.processes = [context.Process(target=_work, args=(location, cache_dir, folder, capacity, self.requests,
                                                               os.getpid()), daemon=True, name=f"tokenmill-l3-{i}")
                          for i in range(workers)]
        for process in self.processes:
            process.start()

    def request(self, shard: int) -> None:
        self.requests.put(shard)

    def close(self) -> None:
        for _ in self.processes:
            self.requests.put(None)
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
        self.requests.close()


def _work(location: str, cache_dir: str | None, folder: Path, capacity: int, requests, parent: int) -> None:
    source = ShardSource(location, cache_dir)
    arena = SharedArena(arena_key(source.location, source.index), len(source.entries), capacity, folder)
    try:
        while True:
            try:
                shard = requests.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent:  # the loader's process died
                    return
                continue
            if shard is None:
                return
            try:
                arena.fill(shard, lambda: read_shard(source, shard))
            except Exception:  # the loader raises the same error when it needs this shard
                continue
    finally:
        arena.close()
