"""L2, the node-wide shared-memory cache: one preallocated arena per shards folder per node.

Every rank and worker process on a node that reads the same shards maps the same file,
/dev/shm/tokenmill-KEY.arena (KEY from the shards' location and checksums), so each shard is
decompressed at most once per node while it stays cached:

    header   int64s named by Header: magic, version, capacity, shards, decompressions, evictions, clock,
             data offset
    table    one row of int64s per shard, named by Field: state (State), generation, offset, bytes,
             rows, tokens, cu, last use, pid
    data     `capacity` bytes; a cached shard is one contiguous run of it (run_views)

Why this shape:
- Preallocated once (posix_fallocate in a background thread, so that a /dev/shm filled by others
  later cannot end in SIGBUS, nor the first batch wait ~0.2 s per GB) and reused by LRU eviction
  under the byte limit: no per-shard segment to create and unlink, and fresh shared pages (several
  times slower to touch than reused ones) are touched once.
- A plain file mapped with mmap, not multiprocessing.shared_memory: Python 3.11's resource
  tracker unlinks SharedMemory segments when any attaching process exits; it never sees this file.
- Table changes take a lock file (flock: the kernel drops it when a holder dies). Readers take no
  lock: they note an entry's generation, copy what they need, and check the generation again
  (a seqlock); eviction bumps it. A shard being written is claimed with the writer's pid, so
  another process waits instead of decompressing it again, and a dead writer's claim is taken over.
- Every attached process holds a shared flock on the arena file. The last one to close unlinks it;
  after SIGKILL nobody does, so each start reuses its own arena (what finished writing is still
  valid) and unlinks any other tokenmill arena that no live process holds.
- Where /dev/shm cannot hold the arena (Docker's default is 64 MB), the same file lives in a disk
  folder instead: a disk-backed memory map, slower only when the page cache is short.
"""

import atexit
import contextlib
import ctypes
import fcntl
import hashlib
import json
import mmap
import os
import shutil
import threading
import time
import warnings
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import numpy as np

from loaders.shard_reader import ShardArrays

SHM = Path("/dev/shm")
MAGIC, VERSION = 0x544D41524E4131, 1  # "TMARNA1"


class Header(IntEnum):
    """The arena file's first int64s."""
    MAGIC = 0
    VERSION = 1
    CAPACITY = 2  # bytes of the data region
    SHARDS = 3  # rows of the table
    DECOMPRESSIONS = 4  # shards written in, by every process of the node
    EVICTIONS = 5
    CLOCK = 6  # the LRU clock
    DATA_OFFSET = 7  # where the data region starts (page-aligned)


class Field(IntEnum):
    """The int64s of a shard's table row."""
    STATE = 0
    GENERATION = 1  # bumped by every change of STATE: readers compare it before and after copying
    OFFSET = 2  # of the shard's run in the data region
    NBYTES = 3  # of that run; 0 when it holds nothing
    ROWS = 4
    TOKENS = 5
    CU = 6  # cu_seqlens values
    LAST_USE = 7  # the CLOCK at the last lookup
    PID = 8  # the writer's, while WRITING


class State(IntEnum):
    """A shard's STATE. Every transition happens under the lock file and bumps GENERATION:
        FREE → WRITING    claimed by the process that decompresses it (_claim)
        WRITING → READY   copied in (_publish); readers may use it
        WRITING → FREE    the decompression failed (_release) or its writer died (_reclaim_dead_writers)
        READY → FREE      evicted, least recently used first (_allocate)
    """
    FREE = 0
    WRITING = 1
    READY = 2


# The reading path runs for every batch: plain ints there (an enum member costs about a microsecond
# to look up on Python 3.11).
_STATE, _GENERATION, _LAST_USE, _READY, _CLOCK = (int(x) for x in (Field.STATE, Field.GENERATION, Field.LAST_USE,
                                                                     State.READY, Header.CLOCK))
ALIGN = 64
PAGE = mmap.PAGESIZE
# madvise advice (Linux 5.14+): map a range's pages in one call instead of one fault per page. First
# touch of fresh shared pages runs at ~0.7 GB/s here, ~2 GB/s populated; reused pages ~8 GB/s.
MADV_POPULATE_WRITE = 23
# libc's madvise, called through ctypes because that releases the GIL: mmap.madvise holds it for the
# whole call (~1 ms per 4 MB of fresh pages), and the reader and the other L3 thread stood still.
_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


@dataclass(frozen=True)
class CachedShard:
    """A shard's rows in the arena (views, no copy). Valid while the generation it was read at is
    current: check with SharedArena.still_valid."""
    shard: int
    generation: int
    arrays: ShardArrays  # offsets int64
    run: tuple[int, int, int, int]  # (where it starts in the arena file, 8-byte aligned; rows, tokens, cu)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays)


def arena_name(key: str) -> str:
    return f"tokenmill-{key}.arena"


def arena_key(location: str, index: dict) -> str:
    """Same shards (location and checksums) → same arena on the node."""
    identity = json.dumps([location, [(e["file"], e["checksum"]) for e in index["shards"]]])
    return hashlib.blake2b(identity.encode(), digest_size=8).hexdigest()


def arena_folder(key: str, needed: int, fallback: Path, shm: Path = SHM) -> Path:
    """Where the arena of `key` is, else /dev/shm when it can hold `needed` more bytes, else the disk
    folder `fallback` (every process of the node must choose the same: an existing arena wins)."""
    for folder in (shm, fallback):
        if (folder / arena_name(key)).exists():
            return folder
    if shm.is_dir() and shutil.disk_usage(shm).free >= needed:
        return shm
    warnings.warn(f"{shm} has less than {needed / 2**20:.0f} MiB free: the shard cache is a memory-mapped "
                  f"file in {fallback} instead (give the container a larger --shm-size to keep it in memory)",
                  stacklevel=3)
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def entry_bytes(rows: int, tokens: int, cu: int) -> int:
    """Bytes of a shard's run in the data region (see `run_views`), aligned."""
    return -(-(16 * (rows + 1) + 4 * tokens + 4 * cu) // ALIGN) * ALIGN


def run_views(buffer, base: int, rows: int, tokens: int, cu: int) -> ShardArrays:
    """The arrays of the run at `base`: token_offsets int64[rows + 1], cu_offsets int64[rows + 1],
    tokens uint32[tokens], cu_seqlens int32[cu], in that order."""
    return ShardArrays(token_offsets=np.frombuffer(buffer, np.int64, rows + 1, base),
                       tokens=np.frombuffer(buffer, np.uint32, tokens, base + 16 * (rows + 1)),
                       cu_offsets=np.frombuffer(buffer, np.int64, rows + 1, base + 8 * (rows + 1)),
                       cu_seqlens=np.frombuffer(buffer, np.int32, cu, base + 16 * (rows + 1) + 4 * tokens))


def arena_bytes(shards: int, capacity: int) -> int:
    """The arena file's size: header and table, then the data."""
    return data_offset(shards) + capacity


def data_offset(shards: int) -> int:
    return -(-(8 * (len(Header) + shards * len(Field))) // PAGE) * PAGE


class ArenaTooSmall(ValueError):
    """A shard does not fit in the cache's byte limit."""


class SharedArena:
    """Opens (or creates) the arena of `key` in `folder` (see arena_folder)."""

    def __init__(self, key: str, shards: int, capacity: int, folder: Path):
        total = arena_bytes(shards, capacity)
        self.path = folder / arena_name(key)
        self._thread_lock = threading.RLock()  # flock does not exclude threads sharing one lock file
        self._lock_path = self.path.with_suffix(".lock")
        with self._locked():
            sweep_stale_arenas(folder, keep=self.path)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_SH)  # "attached"; the kernel drops it when we die
            if os.fstat(self._fd).st_size == 0:
                os.ftruncate(self._fd, total)
            self._mm = mmap.mmap(self._fd, os.fstat(self._fd).st_size)
            self.header = np.frombuffer(self._mm, np.int64, len(Header))
            if self.header[Header.MAGIC] == 0:  # new, or its creator died before writing the header
                self.header[:] = 0
                self.header[[Header.MAGIC, Header.VERSION, Header.CAPACITY, Header.SHARDS, Header.DATA_OFFSET]] = [
                    MAGIC, VERSION, capacity, shards, data_offset(shards)]
                # arena_folder checked that the space is free; the reservation makes sure it stays so
                threading.Thread(target=_reserve, args=(os.dup(self._fd), len(self._mm), folder), daemon=True).start()
            elif (self.header[Header.MAGIC] != MAGIC or self.header[Header.VERSION] != VERSION
                  or self.header[Header.SHARDS] != shards):
                raise RuntimeError(f"{self.path} is not a tokenmill arena of {shards} shards (remove it)")
            self.capacity, self._data = int(self.header[Header.CAPACITY]), int(self.header[Header.DATA_OFFSET])
            self.table = np.frombuffer(self._mm, np.int64, shards * len(Field), 8 * len(Header)).reshape(
                shards, len(Field))
            # The whole file, for the batch kernel that reads runs by their offset (loaders/collate.py)
            self.memory = np.frombuffer(self._mm, np.uint8)
            self._reclaim_dead_writers()
        atexit.register(self.close)  # a normal exit detaches too; only a kill leaves the arena for the next start

    @contextlib.contextmanager
    def _locked(self):
        with self._thread_lock:
            fd = lock_exclusive(self._lock_path)
            try:
                yield
            finally:
                os.close(fd)

    @property
    def decompressions(self) -> int:
        """Shards decompressed into this arena by every process on the node."""
        return int(self.header[Header.DECOMPRESSIONS])

    @property
    def evictions(self) -> int:
        """Shards dropped to make room, by every process on the node."""
        return int(self.header[Header.EVICTIONS])

    # -- reading (no lock) ------------------------------------------------------------------------

    def lookup(self, shard: int) -> CachedShard | None:
        row = self.table[shard]
        generation = int(row[_GENERATION])
        if row[_STATE] != _READY:
            return None
        run = (self._data + int(row[Field.OFFSET]), int(row[Field.ROWS]), int(row[Field.TOKENS]), int(row[Field.CU]))
        try:
            cached = CachedShard(shard, generation, run_views(self._mm, *run), run)
        except ValueError:  # fields read while another process rewrote them
            return None
        self.touch(shard)
        return cached

    def touch(self, shard: int) -> None:
        """Marks a use for the LRU order (an approximate clock: a lost update costs nothing)."""
        self.header[_CLOCK] += 1
        self.table[shard, _LAST_USE] = self.header[_CLOCK]

    def _populate_for_write(self, start: int, length: int) -> bool:
        """Maps the pages of [start, start + length) of the file, the GIL released; False where the kernel
        refuses the advice (before 5.14: the pages then fault in as they are written)."""
        memory = self.memory  # held: the mapping cannot be closed under the call
        first = start // PAGE * PAGE
        end = min(start + length, len(memory))
        return _libc.madvise(memory.ctypes.data + first, end - first, MADV_POPULATE_WRITE) == 0

    def is_ready(self, shard: int) -> bool:
        return self.table[shard, _STATE] == _READY

    def still_valid(self, cached: CachedShard) -> bool:
        """True when nothing evicted or rewrote the shard since `cached` was looked up."""
        row = self.table[cached.shard]
        return row[_STATE] == _READY and row[_GENERATION] == cached.generation

    # -- writing ----------------------------------------------------------------------------------

    def fill(self, shard: int, decode) -> tuple[CachedShard, bool]:
        """The cached shard, decompressing it with `decode()` (contents, see _publish) unless cached or
        being written by another process (then wait). Also says whether this call decompressed it."""
        decompressed = False
        while True:
            if (cached := self.lookup(shard)) is not None:
                return cached, decompressed
            if self._claim(shard):
                try:
                    self._publish(shard, decode())
                except BaseException:
                    self._release(shard)
                    raise
                decompressed = True
            else:
                time.sleep(0.002)

    def _claim(self, shard: int) -> bool:
        with self._locked():
            row = self.table[shard]
            if row[Field.STATE] == State.READY or (row[Field.STATE] == State.WRITING and _alive(int(row[Field.PID]))):
                return False
            row[[Field.STATE, Field.PID, Field.NBYTES]] = [State.WRITING, os.getpid(), 0]
            row[Field.GENERATION] += 1
            return True

    def _release(self, shard: int) -> None:
        with self._locked():
            row = self.table[shard]
            if row[Field.STATE] == State.WRITING and row[Field.PID] == os.getpid():
                self._free(row)

    def _publish(self, shard: int, contents) -> None:
        """Writes a shard's `contents` (shard_reader.DecodedShard or CompressedShard) into one run of the
        arena and marks it ready."""
        rows, tokens, cu = contents.rows, contents.tokens, contents.cu
        nbytes = entry_bytes(rows, tokens, cu)
        while True:
            with self._locked():
                offset = self._allocate(shard, nbytes)
                if offset is not None:
                    self.table[shard, [Field.OFFSET, Field.NBYTES, Field.ROWS, Field.TOKENS, Field.CU]] = [
                        offset, nbytes, rows, tokens, cu]
                    break
            time.sleep(0.002)  # the room is held by shards being written: evictable once they are ready
        self._populate_for_write(self._data + offset, nbytes)
        contents.write_into(run_views(self._mm, self._data + offset, rows, tokens, cu))
        with self._locked():
            self.table[shard, Field.STATE] = State.READY
            self.table[shard, Field.GENERATION] += 1
            self.header[Header.DECOMPRESSIONS] += 1

    def _allocate(self, shard: int, nbytes: int) -> int | None:
        """First fit in the data region, evicting least recently used shards until one fits; None while
        the room is held by shards other writers (threads or processes) are still writing: the smallest
        cache holds the reader's blocks and the writes in flight, not always all at once. Locked."""
        if nbytes > self.capacity:
            raise ArenaTooSmall(f"shard {shard} needs {nbytes / 2**20:.1f} MiB decompressed; the shard cache holds "
                                f"{self.capacity / 2**20:.1f} MiB (raise cache_bytes)")
        while True:
            used = np.nonzero(self.table[:, Field.NBYTES] > 0)[0]
            spans = sorted(zip(self.table[used, Field.OFFSET].tolist(), self.table[used, Field.NBYTES].tolist()))
            cursor = 0
            for start, length in spans + [(self.capacity, 0)]:
                if start - cursor >= nbytes:
                    return cursor
                cursor = max(cursor, start + length)
            ready = np.nonzero(self.table[:, Field.STATE] == State.READY)[0]
            if len(ready) == 0:  # every run in use is being written: wait for one, unless its writer died
                if self._reclaim_dead_writers():
                    continue
                return None
            self._free(self.table[ready[np.argmin(self.table[ready, Field.LAST_USE])]])
            self.header[Header.EVICTIONS] += 1

    def _reclaim_dead_writers(self) -> bool:
        """Claims left by killed processes become free again; says whether there were any. Locked."""
        dead = [shard for shard in np.nonzero(self.table[:, Field.STATE] == State.WRITING)[0]
                if not _alive(int(self.table[shard, Field.PID]))]
        for shard in dead:
            self._free(self.table[shard])
        return bool(dead)

    @staticmethod
    def _free(row: np.ndarray) -> None:
        """A table row back to FREE (its run reusable). Locked."""
        row[[Field.STATE, Field.NBYTES]] = [State.FREE, 0]
        row[Field.GENERATION] += 1

    def close(self) -> None:
        """Detach; the last process attached removes the arena."""
        if self._fd < 0:
            return
        with self._locked():
            self.header = self.table = self.memory = None
            with contextlib.suppress(BufferError):  # views still held elsewhere: the GC unmaps later
                self._mm.close()
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.path.unlink(missing_ok=True)
                self._lock_path.unlink(missing_ok=True)  # waiters notice (lock_exclusive) and start over
            except BlockingIOError:
                pass  # others still attached
            os.close(self._fd)
            self._fd = -1
        atexit.unregister(self.close)


def sweep_stale_arenas(folder: Path, keep: Path) -> list[Path]:
    """Unlinks every other tokenmill arena in `folder` that no live process holds (left by SIGKILL)."""
    removed = []
    for path in folder.glob("tokenmill-*.arena"):
        if path == keep:
            continue
        lock_fd = lock_exclusive(path.with_suffix(".lock"), blocking=False)
        if lock_fd is None:  # busy: someone is opening or closing it
            continue
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink()
                path.with_suffix(".lock").unlink(missing_ok=True)
                removed.append(path)
            finally:
                os.close(fd)
        except (BlockingIOError, FileNotFoundError):
            pass
        finally:
            os.close(lock_fd)
    return removed


def lock_exclusive(path: Path, blocking: bool = True) -> int | None:
    """An open descriptor holding the flock of the lock file now at `path` (close it to unlock); None
    when busy and not `blocking`. Lock files are unlinked with their arena, so after waiting, check
    that the file locked is still the one at `path`, else start over with the new one."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def _reserve(fd: int, total: int, folder: Path) -> None:
    """posix_fallocate: the pages exist from here on, so a full /dev/shm cannot end in SIGBUS later.
    `fd` is this thread's own descriptor (the arena may close its own meanwhile)."""
    try:
        os.posix_fallocate(fd, 0, total)
    except OSError as e:
        warnings.warn(f"could not reserve {total / 2**20:.0f} MiB for the shard cache in {folder}: {e}; "
                      "lower cache_bytes if /dev/shm fills up", stacklevel=2)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
