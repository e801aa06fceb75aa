"""L2, the node-wide arena: shared by processes (each shard decompressed once), LRU eviction that
readers notice, and what SIGKILLed processes leave behind reclaimed by the next start."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from loaders.shard_loader import ShardLoader
from loaders.shard_reader import ShardSource, read_shard
from loaders.shm_arena import SHM, SharedArena, arena_key, arena_name, entry_bytes
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
    left = sorted(private_shm.glob("tokenmill-*.arena"))
    assert len(left) == 2  # nobody closed them
    loader = ShardLoader(str(tmp_path / "a"), 8, seed=1)
    assert sorted(private_shm.glob("tokenmill-*.arena")) == [loader.arena.path]  # b's was swept
    assert tokens(loader, 6) == expected
    assert loader.stats()["decompressions"] == 0  # what the killed process decompressed is reused
    loader.close()
    assert not list(private_shm.glob("tokenmill-*.arena"))


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
