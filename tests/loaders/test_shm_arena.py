"""L2, the node-wide arena: shared by processes (each shard decompressed once), LRU eviction that
readers notice, and what SIGKILLed processes leave behind reclaimed by the next start."""

import multiprocessing
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from loaders.shard_loader import ShardLoader
from loaders.shard_reader import ShardSource, read_shard
from loaders.shm_arena import (
    PAGE,
    SHM,
    Field,
    SharedArena,
    StalledClaim,
    State,
    arena_key,
    arena_name,
    entry_bytes,
    user_folder,
)
from schemas.trust import UntrustedPath
from tests.conftest import shared_tmp
from tests.shard_fixtures import write_shards

REPO = Path(__file__).resolve().parents[2]


def tokens(loader, steps):
    return [next(loader)["input_ids"].tolist() for _ in range(steps)]


def test_eviction_takes_the_least_recently_used_and_readers_notice(tmp_path, private_shm):
    write_shards(tmp_path, parts=4)
    source = ShardSource(str(tmp_path))
    sizes = [entry_bytes(e.rows, e.tokens, read_shard(source, i).cu) for i, e in enumerate(source.entries)]
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
    assert cached.arrays.tokens.size == source.entries[1].tokens and arena.evictions == 1
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
    seen = [next(loader)["sample_index"].tolist() for _ in range(loader.sets[0].order.epoch_size // (4 * world))]
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
    assert not (user_folder(SHM) / arena_name(arena_key(source.location, source.index))).exists()  # the last removed it


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
        for _ in range(loader.sets[0].order.epoch_size // 8):
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
    assert sorted(mine.glob("tokenmill-*.arena")) == [loader.sets[0].arena.path]  # b's was swept
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
    assert decompressed and cached.arrays.tokens.size == source.entries[1].tokens


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
    assert child.exitcode == 0 and loader.sets[0].arena.path.exists()
    again = ShardLoader(str(tmp_path), 4, seed=1)
    assert tokens(again, 2) == first and again.stats()["decompressions"] == 0
    assert tokens(loader, 1) == tokens(again, 1)  # the first process still reads the arena the child left intact


# -- other users on the node, and writers that stall or vanish ---------------------------------------------------


def poisoned_arena(shards: Path, scratch: Path) -> tuple[Path, list]:
    """A copy of the arena a loader of `shards` fills, every token in it replaced by 666, and what the
    loader reads from the real shards (4 batches)."""
    scratch.mkdir()
    with ShardLoader(str(shards), 8, seed=1, shm_dir=str(scratch)) as loader:
        expected = tokens(loader, 4)
        for shard in range(len(loader.sets[0].source.entries)):
            cached = loader.sets[0].arena.fill(shard, lambda s=shard: read_shard(loader.sets[0].source, s))[0]
            cached.arrays.tokens[:] = 666
        copy = scratch / "poisoned.arena"
        copy.write_bytes(loader.sets[0].arena.path.read_bytes())
    copy.chmod(0o644)
    return copy, expected


def test_an_arena_another_user_planted_where_the_key_points_is_never_read(tmp_path, other_user):
    """User B computes A's arena key from the shards and plants a world-writable arena full of token 666
    where A's loader used to look (SHM/tokenmill-KEY.arena): A trains on the real tokens."""
    write_shards(tmp_path / "shards", parts=3)
    shm = shared_tmp(tmp_path / "shm")
    copy, expected = poisoned_arena(tmp_path / "shards", shared_tmp(tmp_path / "b") / "scratch")
    source = ShardSource(str(tmp_path / "shards"))
    planted = shm / arena_name(arena_key(source.location, source.index))
    other_user.python(f"import shutil, os; shutil.copy({str(copy)!r}, {str(planted)!r}); "
                      f"os.chmod({str(planted)!r}, 0o666)")
    with ShardLoader(str(tmp_path / "shards"), 8, seed=1, shm_dir=str(shm)) as loader:
        assert tokens(loader, 4) == expected
    assert planted.stat().st_uid == other_user.uid  # passed over, not removed: it is B's


def test_arena_folders_another_user_planted_are_passed_over(tmp_path, other_user, monkeypatch):
    """/dev/shm/tokenmill-UID was predictable: planted by another user, it stopped every job of this one.
    The folder's name now derives from a secret in the user's own cache: a name another user took
    anyway (seen in /dev/shm, planted after a reboot) is passed over, with a warning, for the next one,
    which every process of the user finds alike."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_shards(tmp_path / "shards")
    shm = shared_tmp(tmp_path / "shm")
    old = shm / f"tokenmill-{os.getuid()}"
    other_user.python(f"import os; os.mkdir({str(old)!r}, 0o777); os.chmod({str(old)!r}, 0o777)")
    with ShardLoader(str(tmp_path / "shards"), 8, shm_dir=str(shm)) as loader:
        next(loader)
        first = loader.sets[0].arena.path.parent
    assert first != old and first.stat().st_uid == os.getuid() and old.stat().st_uid == other_user.uid
    first.rmdir()  # gone (a reboot), and planted by one who saw its name
    other_user.python(f"import os; os.mkdir({str(first)!r}, 0o777); os.chmod({str(first)!r}, 0o777)")
    with pytest.warns(UserWarning, match=f"{first} belongs to uid {other_user.uid}"):
        loader = ShardLoader(str(tmp_path / "shards"), 8, shm_dir=str(shm))
    with loader:
        next(loader)
        second = loader.sets[0].arena.path.parent
        assert second not in (first, old) and stat.S_IMODE(second.stat().st_mode) == 0o700
        code = "import sys; from pathlib import Path; from loaders.shm_arena import user_folder; " \
               "print(user_folder(Path(sys.argv[1])))"
        found = subprocess.run([sys.executable, "-W", "ignore", "-c", code, str(shm)], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout.strip()
        assert found == str(second)  # another process of the user finds the same folder


def test_without_a_private_cache_a_squatted_arena_folder_is_passed_over_for_one_of_a_random_name(
        tmp_path, other_user, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file" / "cache"))  # no cache to keep a secret in
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where caches go instead
    write_shards(tmp_path / "shards")
    shm = shared_tmp(tmp_path / "shm")
    with pytest.warns(UserWarning, match="no private cache"):
        assert user_folder(shm) == shm / f"tokenmill-{os.getuid()}"  # the predictable name, this user's own
    (shm / f"tokenmill-{os.getuid()}").rmdir()
    old = shm / f"tokenmill-{os.getuid()}"
    other_user.python(f"import os; os.mkdir({str(old)!r}, 0o777); os.chmod({str(old)!r}, 0o777)")
    with pytest.warns(UserWarning, match=f"{old} belongs to uid {other_user.uid}"):
        loader = ShardLoader(str(tmp_path / "shards"), 8, shm_dir=str(shm))
    with loader:
        next(loader)
        folder = loader.sets[0].arena.path.parent
        assert folder.parent == shm and folder != old and stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_an_arena_file_in_the_users_folder_that_is_not_their_own_is_refused(tmp_path, other_user):
    write_shards(tmp_path / "shards")
    shm = shared_tmp(tmp_path / "shm")
    mine = user_folder(shm)
    copy, _ = poisoned_arena(tmp_path / "shards", shared_tmp(tmp_path / "b") / "scratch")
    source = ShardSource(str(tmp_path / "shards"))
    planted = mine / arena_name(arena_key(source.location, source.index))
    planted.write_bytes(copy.read_bytes())
    os.chown(planted, other_user.uid, other_user.uid)  # what root, or a looser folder, would let B leave
    with pytest.raises(UntrustedPath, match=f"belongs to uid {other_user.uid}"):
        ShardLoader(str(tmp_path / "shards"), 8, shm_dir=str(shm))
    planted.unlink()
    planted.symlink_to(copy)
    with pytest.raises(UntrustedPath, match="symbolic link"):
        ShardLoader(str(tmp_path / "shards"), 8, shm_dir=str(shm))


@pytest.mark.parametrize("size", ["short", "long", "tiny"])
def test_an_arena_whose_header_disagrees_with_its_size_is_refused(tmp_path, private_shm, size):
    write_shards(tmp_path)
    source = ShardSource(str(tmp_path))
    key = arena_key(source.location, source.index)
    arena = SharedArena(key, 2, 1 << 20, private_shm)
    fd = os.open(arena.path, os.O_RDWR)
    os.ftruncate(fd, {"short": os.fstat(fd).st_size - PAGE, "long": os.fstat(fd).st_size + PAGE, "tiny": 16}[size])
    os.close(fd)
    with pytest.raises(RuntimeError, match="not a tokenmill arena|too few"):
        SharedArena(key, 2, 1 << 20, private_shm)


LOADER_AS_USER = """
import sys, time
from loaders import ShardLoader
loader = ShardLoader({shards!r}, 4, seed=1, shm_dir={shm!r}, cache_dir={cache!r})
first = next(loader)["input_ids"]
print("READY", int(first.sum()), flush=True)
if {hold}:
    time.sleep(600)
loader.close()
"""


def test_another_users_running_loader_does_not_stop_this_users(tmp_path, other_user):
    """Two users (neither root) read shards with one shared-memory folder: B's arena and lock files are
    B's own, and A's start passes them over."""
    from tests.conftest import OtherUser, unused_uid

    user_a, user_b = OtherUser(unused_uid(other_user.uid + 1)), other_user
    write_shards(tmp_path / "shards")
    shm, caches = shared_tmp(tmp_path / "shm"), shared_tmp(tmp_path / "caches")
    script = dict(shards=str(tmp_path / "shards"), shm=str(shm))
    b = subprocess.Popen(user_b.command(sys.executable, "-c", LOADER_AS_USER.format(**script, cache=str(caches / "b"),
                                                                                   hold=True)),
                         cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert b.stdout.readline().startswith("READY")
        a = subprocess.run(user_a.command(sys.executable, "-c", LOADER_AS_USER.format(**script, cache=str(caches / "a"),
                                                                                     hold=False)),
                           cwd=REPO, capture_output=True, text=True, timeout=120)
        assert a.returncode == 0 and a.stdout.startswith("READY"), a.stderr[-2000:]
    finally:
        kill(b)


def test_a_stalled_claim_is_reported_with_the_pid_that_holds_it(tmp_path, private_shm):
    write_shards(tmp_path)
    child = start_child(f"""
        from pathlib import Path
        from loaders.shard_reader import ShardSource
        from loaders.shm_arena import SharedArena, arena_key
        source = ShardSource({str(tmp_path)!r})
        arena = SharedArena(arena_key(source.location, source.index), 2, 1 << 24, Path({str(private_shm)!r}))
        assert arena._claim(1)  # and never writes it: stuck in a read that does not return
        print("READY", flush=True)
        import time; time.sleep(600)
        """)
    try:
        source = ShardSource(str(tmp_path))
        arena = SharedArena(arena_key(source.location, source.index), 2, 1 << 24, private_shm, claim_timeout=0.5)
        with pytest.raises(StalledClaim, match=f"claimed for over 0 s by pid {child.pid} "):
            arena.fill(1, lambda: read_shard(source, 1))
    finally:
        kill(child)
    cached, decompressed = arena.fill(1, lambda: read_shard(source, 1))  # its claim went with it
    assert decompressed and cached.arrays.tokens.size == source.entries[1].tokens


def fill_within(arena, source, shard, seconds=30):
    """arena.fill in a thread, so that a wait that never ends fails the test instead of hanging it."""
    result = []
    thread = threading.Thread(target=lambda: result.append(arena.fill(shard, lambda: read_shard(source, shard))),
                              daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"fill({shard}) still waiting after {seconds} s"
    return result[0]


def test_a_claim_whose_pid_now_names_another_live_process_is_taken_over(tmp_path, private_shm):
    """The writer died and its pid was reused (here: the test's parent process, alive): the claim holds no
    lock, so it is a dead writer's."""
    write_shards(tmp_path)
    source = ShardSource(str(tmp_path))
    arena = SharedArena(arena_key(source.location, source.index), 2, 1 << 24, private_shm)
    arena.table[1, [Field.STATE, Field.PID]] = [State.WRITING, os.getppid()]
    cached, decompressed = fill_within(arena, source, 1)
    assert decompressed and cached.arrays.tokens.size == source.entries[1].tokens


@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("unshare"), reason="a PID namespace needs root and unshare")
def test_a_writer_in_another_pid_namespace_is_waited_for_alive_and_taken_over_dead(tmp_path, private_shm):
    """In its own PID namespace the writer is pid 1 or so: its pid means nothing here."""
    write_shards(tmp_path)
    code = textwrap.dedent(f"""
        from pathlib import Path
        from loaders.shard_reader import ShardSource
        from loaders.shm_arena import SharedArena, arena_key
        source = ShardSource({str(tmp_path)!r})
        arena = SharedArena(arena_key(source.location, source.index), 2, 1 << 24, Path({str(private_shm)!r}))
        assert arena._claim(1)
        print("READY", flush=True)
        import time; time.sleep(600)
        """)
    child = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-c", code], cwd=REPO,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "READY"
    source = ShardSource(str(tmp_path))
    arena = SharedArena(arena_key(source.location, source.index), 2, 1 << 24, private_shm, claim_timeout=0.5)
    try:
        with pytest.raises(StalledClaim, match="of another PID namespace"):
            arena.fill(1, lambda: read_shard(source, 1))
    finally:
        kill(child)  # unshare, and with it (--kill-child) the writer
    arena.claim_timeout = 30
    cached, decompressed = fill_within(arena, source, 1)
    assert decompressed and cached.arrays.tokens.size == source.entries[1].tokens


def test_the_disk_folder_is_made_only_when_the_cache_goes_there(tmp_path, private_shm):
    from loaders.shm_arena import arena_folder

    assert arena_folder("k", 1 << 20, tmp_path / "arena", private_shm) == user_folder(private_shm)
    assert not (tmp_path / "arena").exists()  # /dev/shm had room: nothing on the disk
    assert arena_folder("k", 1 << 20, tmp_path / "arena", tmp_path / "no-shm") == tmp_path / "arena"
    assert stat.S_IMODE((tmp_path / "arena").stat().st_mode) == 0o700
