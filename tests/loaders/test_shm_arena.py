"""L2, the node-wide arena: shared by processes (each shard decompressed once), LRU eviction that
readers notice, and what SIGKILLed processes leave behind reclaimed by the next start."""

import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from loaders.shard_loader import ShardLoader
from loaders.shard_reader import ShardSource, read_shard
from loaders.shm_arena import PAGE, SHM, SharedArena, arena_key, arena_name, entry_bytes, user_folder
from tests.shard_fixtures import write_shards

REPO = Path(__file__).resolve().parents[2]


def tokens(loader, steps):
    return [next(loader)["input_ids"].tolist() for _ in range(steps)]


def test_eviction_takes_the_least_recently_used_and_readers_notice(tmp_path, private_shm):
    write_shards(tmp_path, parts=4)
    source = ShardSource(str(tmp_path))
    sizes = [entry_bytes(e["rows"], e["tokens"], read_shard(source, i).cu) for i, e in enumerate(source.entries)]
    arena = SharedArena(arena_key(source.location, source.index), 4, sum(sorted(sizes)[-2:]), private_shm)
    fill = lambda shard: arena.fill(shard, lambda: read_shard(source, shard))  # noqa: E731
    first, decompressed = fill(0)
    assert decompressed and arena.still_valid(first)
    second, _ = fill(1)
    assert arena.lookup(0) is not None  # 0 is now more recently used than 1
    fill(2)  # room for two: 1 goes
    assert arena.lookup(1) is None and not arena.still_valid(second) and arena.still_valid(arena.lookup(0))
    again, decompressed = fill(1)
    assert decompressed and again.generation != second.generation and arena.decompressions == 4
    assert fill(1)[1] is False  # a hit


class HeldWrite:
    """A shard's contents whose write into L2 waits for `go`: its run is allocated, still being written."""

    def __init__(self, contents):
        self.contents, self.allocated, self.go = contents, threading.Event(), threading.Event()
        self.rows, self.tokens, self.cu = contents.rows, contents.tokens, contents.cu

    def write_into(self, run):
        self.allocated.set()
        self.go.wait()
        self.contents.write_into(run)


def test_a_shard_that_fits_only_after_the_writes_in_flight_waits_for_them(tmp_path, private_shm):
    """The smallest cache can have every byte held by shards other threads are still writing (none ready,
    so nothing to evict): a writer then waits for them instead of failing with ArenaTooSmall."""
    write_shards(tmp_path, parts=2)
    source = ShardSource(str(tmp_path))
    contents = [read_shard(source, shard) for shard in (0, 1)]
    capacity = max(entry_bytes(c.rows, c.tokens, c.cu) for c in contents)  # one shard at a time
    arena = SharedArena(arena_key(source.location, source.index), 2, capacity, private_shm)
    held = HeldWrite(contents[0])
    writer = threading.Thread(target=arena.fill, args=(0, lambda: held))
    writer.start()
    held.allocated.wait()
    refused = threading.Event()
    allocate = arena._allocate

    def allocate_and_release(shard, nbytes):
        offset = allocate(shard, nbytes)
        if offset is None:  # shard 1 found no room: the write in flight may finish now
            refused.set()
            held.go.set()
        return offset

    arena._allocate = allocate_and_release
    try:
        cached, decompressed = arena.fill(1, lambda: read_shard(source, 1))
    finally:
        held.go.set()
        writer.join()
    assert refused.is_set() and decompressed
    assert cached.arrays.tokens.size == source.entries[1]["tokens"] and arena.evictions == 1
    arena.close()


@pytest.mark.skipif(not SHM.is_dir(), reason="needs /dev/shm")
def test_a_run_is_mapped_before_it_is_written():
    """L3 populates a run's pages in one call (the GIL released) instead of taking a fault per page: the
    writes that follow fault only where nothing was populated (the control half)."""
    pages = 2048
    arena = SharedArena(f"populate-test-{os.getpid()}", 1, 2 * pages * PAGE, SHM)
    try:
        populated, control = arena._data, arena._data + pages * PAGE
        if not arena._populate_for_write(populated, pages * PAGE):
            pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)")

        def faults_writing(start):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            arena.memory[start:start + pages * PAGE] = 1
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

        if faults_writing(control) < pages // 2:
            pytest.skip("/dev/shm gives huge pages here: a write faults many pages in at once, nothing to tell apart")
        assert faults_writing(populated) < pages // 8
    finally:
        arena.close()


def read_epoch(path, shm, rank, world, barrier, results):
    loader = ShardLoader(path, 4, rank=rank, world_size=world, seed=1, shm_dir=shm)
    seen = [next(loader)["sample_index"].tolist() for _ in range(loader.order.epoch_size // (4 * world))]
    barrier.wait()  # everyone attached and done before anyone closes (the last one removes the arena)
    results.put((rank, seen, loader.stats()["decompressions"], loader.stats()["node_decompressions"]))
    barrier.wait()
    loader.close()


@pytest.mark.skipif(not SHM.is_dir(), reason="needs /dev/shm")
def test_processes_on_a_node_share_one_cache_in_dev_shm(tmp_path):
    write_shards(tmp_path, parts=6)
    world = 3
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(world), context.Queue()
    processes = [context.Process(target=read_epoch, args=(str(tmp_path), str(SHM), r, world, barrier, results))
                 for r in range(world)]
    for p in processes:
        p.start()
    got = sorted(results.get(timeout=120) for _ in processes)
    for p in processes:
        p.join(timeout=60)
    assert sum(decompressions for _, _, decompressions, _ in got) == 6  # each shard once on the node
    assert {node for *_, node in got} == {6}
    steps = len(got[0][1])
    assert [i for step in range(steps) for _, seen, _, _ in got for i in seen[step]] == list(range(steps * 4 * world))
    source = ShardSource(str(tmp_path))
    assert not (SHM / arena_name(arena_key(source.location, source.index))).exists()  # the last to close removed it


def start_child(code: str) -> subprocess.Popen:
    """A Python process running `code`; returns once it printed READY."""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout.readline().strip() == "READY"
    return child


def kill(child: subprocess.Popen) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


def test_after_sigkill_the_next_start_reuses_its_arena_and_removes_stale_ones(tmp_path, private_shm):
    write_shards(tmp_path / "a", parts=3)
    write_shards(tmp_path / "b", parts=3)
    with ShardLoader(str(tmp_path / "a"), 8, seed=1) as reference:  # closed: its arena is removed
        expected = tokens(reference, 6)
    children = [start_child(f"""
        from loaders import ShardLoader
        loader = ShardLoader({str(tmp_path / name)!r}, 8, seed=1, shm_dir={str(private_shm)!r})
        for _ in range(loader.order.epoch_size // 8):
            next(loader)
        print("READY", flush=True)
        import time; time.sleep(600)
        """) for name in ("a", "b")]
    for child in children:
        kill(child)
    mine = user_folder(private_shm)
    left = sorted(mine.glob("tokenmill-*.arena"))
    assert len(left) == 2  # nobody closed them
    loader = ShardLoader(str(tmp_path / "a"), 8, seed=1)
    assert sorted(mine.glob("tokenmill-*.arena")) == [loader.arena.path]  # b's was swept
    assert tokens(loader, 6) == expected
    assert loader.stats()["decompressions"] == 0  # what the killed process decompressed is reused
    loader.close()
    assert not list(mine.glob("tokenmill-*.arena"))


def test_a_killed_writers_claim_is_taken_over(tmp_path, private_shm):
    write_shards(tmp_path)
    child = start_child(f"""
        from pathlib import Path
        from loaders.shard_reader import ShardSource
        from loaders.shm_arena import SharedArena, arena_key
        source = ShardSource({str(tmp_path)!r})
        arena = SharedArena(arena_key(source.location, source.index), 2, 1 << 24, Path({str(private_shm)!r}))
        assert arena._claim(1)  # as if it were decompressing shard 1
        print("READY", flush=True)
        import time; time.sleep(600)
        """)
    source = ShardSource(str(tmp_path))
    arena = SharedArena(arena_key(source.location, source.index), 2, 1 << 24, private_shm)
    assert arena.lookup(1) is None and not arena._claim(1)  # a live writer's claim is respected
    kill(child)
    cached, decompressed = arena.fill(1, lambda: read_shard(source, 1))
    assert decompressed and cached.arrays.tokens.size == source.entries[1]["tokens"]


def attach_and_exit(path, shm):
    loader = ShardLoader(path, 4, seed=1, shm_dir=shm)
    next(loader)  # and exit without close(), as a crashing worker would


def test_a_process_that_attaches_and_exits_does_not_remove_the_arena(tmp_path, private_shm):
    """multiprocessing's resource tracker would unlink a SharedMemory segment here."""
    write_shards(tmp_path)
    loader = ShardLoader(str(tmp_path), 4, seed=1)
    first = tokens(loader, 2)
    child = multiprocessing.get_context("spawn").Process(target=attach_and_exit, args=(str(tmp_path), str(private_shm)))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0 and loader.arena.path.exists()
    again = ShardLoader(str(tmp_path), 4, seed=1)
    assert tokens(again, 2) == first and again.stats()["decompressions"] == 0
    assert np.all(np.asarray(tokens(loader, 1)) >= 0)
