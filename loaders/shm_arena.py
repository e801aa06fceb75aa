"""L2, the node-wide shared-memory cache: one preallocated arena per shards folder per node.

Every rank and worker process on a node that reads the same shards maps the same file,
/dev/shm/tokenmill-KEY.arena (KEY from the shards' location and checksums), so each shard is
decompressed at most once per node while it stays cached:

    header   8 int64: magic, version, capacity, shards, decompressions, evictions, clock, data offset
    table    one row of FIELDS per shard: state, generation, offset, bytes, rows, tokens, cu, last use, pid
    data     `capacity` bytes; a cached shard is one contiguous run of it: token_offsets int64[rows + 1],
             cu_offsets int64[rows + 1], tokens uint32[tokens], cu_seqlens int32[cu]

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
from pathlib import Path

import numpy as np

SHM = Path("/dev/shm")
MAGIC, VERSION = 0x544D41524E4131, 1  # "TMARNA1"
HEADER_FIELDS = 8
CAPACITY, SHARDS, DECOMPRESSIONS, EVICTIONS, CLOCK, DATA_OFFSET = 2, 3, 4, 5, 6, 7
FIELDS = 9
STATE, GENERATION, OFFSET, NBYTES, ROWS, TOKENS, CU, LAST_USE, PID = range(FIELDS)
FREE, WRITING, READY = 0, 1, 2
ALIGN = 64
PAGE = mmap.PAGESIZE
# madvise advice (Linux 5.14+): map a range's pages in one call instead of one fault per page. First
# touch of fresh shared pages runs at ~0.7 GB/s here, ~2 GB/s populated; reused pages ~8 GB/s.
MADV_POPULATE_WRITE = 23


@dataclass(frozen=True)
class CachedShard:
    """A shard's rows in the arena (views, no copy): row i is tokens[token_offsets[i]:token_offsets[i + 1]].
    Valid while the generation it was read at is current: check with SharedArena.still_valid."""
    shard: int
    generation: int
    tokens: np.ndarray  # uint32
    token_offsets: np.ndarray  # int64, rows + 1
    cu_seqlens: np.ndarray  # int32
    cu_offsets: np.ndarray  # int64, rows + 1

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.tokens, self.token_offsets, self.cu_seqlens, self.cu_offsets))


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
    return -(-(16 * (rows + 1) + 4 * tokens + 4 * cu) // ALIGN) * ALIGN


def arena_bytes(shards: int, capacity: int) -> int:
    """The arena file's size: header and table, then the data."""
    return data_offset(shards) + capacity


def data_offset(shards: int) -> int:
    return -(-(8 * (HEADER_FIELDS + shards * FIELDS)) // PAGE) * PAGE


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
            self.header = np.frombuffer(self._mm, np.int64, HEADER_FIELDS)
            if self.header[0] == 0:  # new, or its creator died before writing the header
                self.header[:] = [MAGIC, VERSION, capacity, shards, 0, 0, 0, data_offset(shards)]
                # arena_folder checked that the space is free; the reservation makes sure it stays so
                threading.Thread(target=_reserve, args=(os.dup(self._fd), len(self._mm), folder), daemon=True).start()
            elif self.header[0] != MAGIC or self.header[1] != VERSION or self.header[SHARDS] != shards:
                raise RuntimeError(f"{self.path} is not a tokenmill arena of {shards} shards (remove it)")
            self.capacity, self._data = int(self.header[CAPACITY]), int(self.header[DATA_OFFSET])
            self.table = np.frombuffer(self._mm, np.int64, shards * FIELDS, 8 * HEADER_FIELDS).reshape(shards, FIELDS)
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
        return int(self.header[DECOMPRESSIONS])

    @property
    def evictions(self) -> int:
        """Shards dropped to make room, by every process on the node."""
        return int(self.header[EVICTIONS])

    # -- reading (no lock) ------------------------------------------------------------------------

    def lookup(self, shard: int) -> CachedShard | None:
        row = self.table[shard]
        generation = int(row[GENERATION])
        if row[STATE] != READY:
            return None
        base, rows, tokens, cu = self._data + int(row[OFFSET]), int(row[ROWS]), int(row[TOKENS]), int(row[CU])
        try:
            cached = CachedShard(shard, generation,
                                 np.frombuffer(self._mm, np.uint32, tokens, base + 16 * (rows + 1)),
                                 np.frombuffer(self._mm, np.int64, rows + 1, base),
                                 np.frombuffer(self._mm, np.int32, cu, base + 16 * (rows + 1) + 4 * tokens),
                                 np.frombuffer(self._mm, np.int64, rows + 1, base + 8 * (rows + 1)))
        except ValueError:  # fields read while another process rewrote them
            return None
        self.touch(shard)
        return cached

    def touch(self, shard: int) -> None:
        """Marks a use for the LRU order (an approximate clock: a lost update costs nothing)."""
        self.header[CLOCK] += 1
        self.table[shard, LAST_USE] = self.header[CLOCK]

    def _populate_for_write(self, start: int, length: int) -> None:
        first = start // PAGE * PAGE
        try:
            self._mm.madvise(MADV_POPULATE_WRITE, first, min(start + length, len(self._mm)) - first)
        except OSError:  # a kernel before 5.14: pages fault in as they are written
            pass

    def is_ready(self, shard: int) -> bool:
        return self.table[shard, STATE] == READY

    def still_valid(self, cached: CachedShard) -> bool:
        """True when nothing evicted or rewrote the shard since `cached` was looked up."""
        row = self.table[cached.shard]
        return row[STATE] == READY and row[GENERATION] == cached.generation

    # -- writing ----------------------------------------------------------------------------------

    def fill(self, shard: int, decode) -> tuple[CachedShard, bool]:
        """The cached shard, decompressing it with `decode()` (chunks, see publish) unless cached or
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
            if row[STATE] == READY or (row[STATE] == WRITING and _alive(int(row[PID]))):
                return False
            row[[STATE, PID, NBYTES]] = [WRITING, os.getpid(), 0]
            row[GENERATION] += 1
            return True

    def _release(self, shard: int) -> None:
        with self._locked():
            row = self.table[shard]
            if row[STATE] == WRITING and row[PID] == os.getpid():
                row[[STATE, NBYTES]] = [FREE, 0]
                row[GENERATION] += 1

    def _publish(self, shard: int, chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Copies a shard's record batches, each (token_offsets, tokens, cu_offsets, cu_seqlens) with
        offsets starting anywhere, into one run of the arena and marks it ready."""
        rows = sum(len(c[0]) - 1 for c in chunks)
        tokens = sum(int(c[0][-1] - c[0][0]) for c in chunks)
        cu = sum(int(c[2][-1] - c[2][0]) for c in chunks)
        nbytes = entry_bytes(rows, tokens, cu)
        with self._locked():
            offset = self._allocate(shard, nbytes)
            self.table[shard, [OFFSET, NBYTES, ROWS, TOKENS, CU]] = [offset, nbytes, rows, tokens, cu]
        base = self._data + offset
        self._populate_for_write(base, nbytes)
        views = (np.frombuffer(self._mm, np.int64, rows + 1, base),
                 np.frombuffer(self._mm, np.uint32, tokens, base + 16 * (rows + 1)),
                 np.frombuffer(self._mm, np.int64, rows + 1, base + 8 * (rows + 1)),
                 np.frombuffer(self._mm, np.int32, cu, base + 16 * (rows + 1) + 4 * tokens))
        for offsets_out, values_out, (offsets, values) in ((views[0], views[1], (0, 1)), (views[2], views[3], (2, 3))):
            row = value = 0
            for chunk in chunks:
                o, v = chunk[offsets], chunk[values]
                n, length = len(o) - 1, int(o[-1] - o[0])
                np.add(o, value - o[0], out=offsets_out[row:row + n + 1], casting="unsafe")
                values_out[value:value + length] = v[o[0]:o[-1]]
                row, value = row + n, value + length
        with self._locked():
            self.table[shard, STATE] = READY
            self.table[shard, GENERATION] += 1
            self.header[DECOMPRESSIONS] += 1

    def _allocate(self, shard: int, nbytes: int) -> int:
        """First fit in the data region, evicting least recently used shards until one fits. Locked."""
        if nbytes > self.capacity:
            raise ArenaTooSmall(f"shard {shard} needs {nbytes / 2**20:.1f} MiB decompressed; the shard cache holds "
                                f"{self.capacity / 2**20:.1f} MiB (raise cache_bytes)")
        while True:
            used = np.nonzero(self.table[:, NBYTES] > 0)[0]
            spans = sorted(zip(self.table[used, OFFSET].tolist(), self.table[used, NBYTES].tolist()))
            cursor = 0
            for start, length in spans + [(self.capacity, 0)]:
                if start - cursor >= nbytes:
                    return cursor
                cursor = max(cursor, start + length)
            ready = np.nonzero(self.table[:, STATE] == READY)[0]
            if len(ready) == 0:
                raise ArenaTooSmall(f"shard {shard} ({nbytes / 2**20:.1f} MiB) does not fit beside the shards being "
                                    f"written into the {self.capacity / 2**20:.1f} MiB cache (raise cache_bytes)")
            victim = self.table[ready[np.argmin(self.table[ready, LAST_USE])]]
            victim[[STATE, NBYTES]] = [FREE, 0]
            victim[GENERATION] += 1
            self.header[EVICTIONS] += 1

    def _reclaim_dead_writers(self) -> None:
        """Claims left by killed processes become free again. Locked."""
        for shard in np.nonzero(self.table[:, STATE] == WRITING)[0]:
            row = self.table[shard]
            if not _alive(int(row[PID])):
                row[[STATE, NBYTES]] = [FREE, 0]
                row[GENERATION] += 1

    def close(self) -> None:
        """Detach; the last process attached removes the arena."""
        if self._fd < 0:
            return
        with self._locked():
            self.header = self.table = None
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
