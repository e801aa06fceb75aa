"""L2, the node-wide shared-memory cache: one preallocated arena per shards folder per node.

Every rank and worker process of one user on a node that reads the same shards maps the same file,
/dev/shm/tokenmill-NAME/tokenmill-KEY.arena (KEY from the shards' location and checksums; NAME from a
secret in the user's own cache, so that no other user can take the folder first: user_folder), so each
shard is decompressed at most once per node while it stays cached:

    header   int64s named by Header: magic, version, capacity, shards, decompressions, evictions, clock,
             data offset
    table    one row of int64s per shard, named by Field: state (State), generation, offset, bytes,
             rows, tokens, cu, last use, and the writer's pid, start time and PID namespace
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
  (a seqlock); eviction bumps it. A shard being written is claimed: its table row says WRITING, and
  the writer holds a lock on byte SHARD of the arena file (an open-file-description lock, released by
  the kernel when the writer dies, whatever PID namespace it runs in), so another process waits
  instead of decompressing it again, a dead writer's claim is taken over, and a reused pid means
  nothing. A claim held past `claim_timeout` is reported, naming the writer's pid.
- Every attached process holds a shared flock on the arena file. The last one to close unlinks it;
  after SIGKILL nobody does, so each start reuses its own arena (what finished writing is still
  valid) and unlinks any other tokenmill arena that no live process holds.
- Where /dev/shm cannot hold the arena (Docker's default is 64 MB), the same file lives in a disk
  folder instead: a disk-backed memory map, slower only when the page cache is short. Neither may be
  asked for more than it has free: a hostile index cannot fill a disk.
- Private to its user: arenas live in a folder of the user's own (0700, checked: schemas/trust.py),
  are created with O_EXCL and opened with O_NOFOLLOW, and are attached only when this user owns
  them, nobody else can write them and their header agrees with their size. Another user's arena
  or lock file is passed over, never opened; so is a folder another user made where this user's was
  to be (a warning, then the next name: trust.shared_private_folder).
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
import stat
import struct
import threading
import time
import warnings
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import numpy as np

from loaders.shard_reader import ShardArrays, process_started
from schemas.index import ShardIndex
from schemas.trust import UntrustedPath, owner_name, private_folder, shared_private_folder

SHM = Path("/dev/shm")
MAGIC, VERSION = 0x544D41524E4131, 2  # "TMARNA1"; 2: claims held by byte locks, with the writer's identity
CLAIM_TIMEOUT = 600.0  # seconds a claimed shard may stay unwritten before the wait for it is an error


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
    PID = 8  # the writer's, while WRITING: for the report of a stalled claim (liveness is the byte lock)
    STARTED = 9  # ... its start time (clock ticks after boot)
    PID_NAMESPACE = 10  # ... and its PID namespace (inode), so that a pid from another one is named as such


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
# struct flock, for open-file-description locks (fcntl.lockf takes process-wide locks, which threads share)
_FLOCK = struct.Struct("hhqqi4x")
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


def arena_key(location: str, index: ShardIndex) -> str:
    """Same shards (location and checksums) → same arena on the node."""
    identity = json.dumps([location, [(e.file, e.checksum) for e in index.shards]])
    return hashlib.blake2b(identity.encode(), digest_size=8).hexdigest()


def user_folder(shm: Path) -> Path:
    """This user's arena folder in the shared-memory folder `shm` (/dev/shm is everyone's), made when absent:
    the same for every process of the user on the node, at a name no other user can take first."""
    return shared_private_folder(shm, "the shard cache's folder")


def arena_folder(key: str, needed: int, fallback: Path, shm: Path = SHM) -> Path:
    """Where the arena of `key` is, else this user's folder in /dev/shm when it can hold `needed` more
    bytes, else the disk folder `fallback` when it can (every process of the node must choose the same:
    an existing arena wins); else ArenaTooSmall. Both folders are this user's own (private_folder)."""
    mine = user_folder(shm) if shm.is_dir() else None
    disk = fallback.exists() or fallback.is_symlink()  # checked when there, made only when chosen
    for folder in (mine, private_folder(fallback, "the shard cache's disk folder") if disk else None):
        if folder is not None and (folder / arena_name(key)).exists():
            return folder
    if mine is not None and shutil.disk_usage(mine).free >= needed:
        return mine
    fallback = private_folder(fallback, "the shard cache's disk folder")
    free = shutil.disk_usage(fallback).free
    if free < needed:
        raise ArenaTooSmall(f"the shard cache needs {needed / 2**30:.2f} GiB, more than {shm} and {fallback} "
                            f"({free / 2**30:.2f} GiB) have free: lower cache_bytes, or check the shards' index")
    warnings.warn(f"{shm} has less than {needed / 2**20:.0f} MiB free: the shard cache is a memory-mapped "
                  f"file in {fallback} instead (give the container a larger --shm-size to keep it in memory)",
                  stacklevel=3)
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
    """A shard does not fit in the cache's byte limit, or the cache in the free space of its folder."""


class StalledClaim(TimeoutError):
    """A shard claimed by a live writer that has not finished it within the claim timeout."""


class SharedArena:
    """Opens (or creates) the arena of `key` in `folder` (see arena_folder). `claim_timeout`: seconds
    to wait for a shard another live process claimed before StalledClaim."""

    def __init__(self, key: str, shards: int, capacity: int, folder: Path, claim_timeout: float = CLAIM_TIMEOUT):
        self.path = folder / arena_name(key)
        self.claim_timeout = claim_timeout
        self._thread_lock = threading.RLock()  # flock does not exclude threads sharing one lock file
        self._lock_path = self.path.with_suffix(".lock")
        self._claims: dict[int, int] = {}  # shard → the descriptor holding its claim's byte lock
        with self._locked():
            sweep_stale_arenas(folder, keep=self.path)
            self._fd = _open_own(self.path, create=True)
            try:
                self._attach(shards, capacity, folder)
            except BaseException:
                os.close(self._fd)
                self._fd = -1
                raise
        atexit.register(self.close)  # a normal exit detaches too; only a kill leaves the arena for the next start

    def _attach(self, shards: int, capacity: int, folder: Path) -> None:
        """Maps the arena file (sizing and heading it when new) and checks its header. Locked."""
        total = arena_bytes(shards, capacity)
        fcntl.flock(self._fd, fcntl.LOCK_SH)  # "attached"; the kernel drops it when we die
        if os.fstat(self._fd).st_size == 0:  # new, or its creator died before sizing it
            os.ftruncate(self._fd, total)
        size = os.fstat(self._fd).st_size
        if size < data_offset(shards):
            raise RuntimeError(f"{self.path} holds {size} bytes, too few for a tokenmill arena of {shards} shards "
                               "(remove it)")
        self._mm = mmap.mmap(self._fd, size)
        self.header = np.frombuffer(self._mm, np.int64, len(Header))
        if self.header[Header.MAGIC] == 0 and size == total:  # new, or its creator died before the header
            self.header[:] = 0
            self.header[[Header.MAGIC, Header.VERSION, Header.CAPACITY, Header.SHARDS, Header.DATA_OFFSET]] = [
                MAGIC, VERSION, capacity, shards, data_offset(shards)]
            # arena_folder checked that the space is free; the reservation makes sure it stays so
            threading.Thread(target=_reserve, args=(os.dup(self._fd), size, folder), daemon=True).start()
        elif not self._header_fits(shards):
            self.header = None
            self._mm.close()
            raise RuntimeError(f"{self.path} is not a tokenmill arena of {shards} shards whose header agrees with "
                               f"its {size} bytes (remove it)")
        self.capacity, self._data = int(self.header[Header.CAPACITY]), int(self.header[Header.DATA_OFFSET])
        self.table = np.frombuffer(self._mm, np.int64, shards * len(Field), 8 * len(Header)).reshape(
            shards, len(Field))
        # The whole file, for the batch kernel that reads runs by their offset (loaders/collate.py)
        self.memory = np.frombuffer(self._mm, np.uint8)
        self._reclaim_dead_writers()

    def _header_fits(self, shards: int) -> bool:
        """An existing arena's header: this format, `shards` rows, and sizes that are the file's."""
        h = self.header
        return (h[Header.MAGIC] == MAGIC and h[Header.VERSION] == VERSION and h[Header.SHARDS] == shards
                and h[Header.DATA_OFFSET] == data_offset(shards) and h[Header.CAPACITY] >= 0
                and arena_bytes(shards, int(h[Header.CAPACITY])) == len(self._mm))

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
        decompressed, waiting_since = False, None
        while True:
            if (cached := self.lookup(shard)) is not None:
                return cached, decompressed
            if self._claim(shard):
                try:
                    self._publish(shard, decode())
                except BaseException:
                    self._release(shard)
                    raise
                decompressed, waiting_since = True, None
                continue
            waiting_since = waiting_since or time.monotonic()
            if time.monotonic() - waiting_since > self.claim_timeout:
                raise StalledClaim(self._stalled(shard))
            time.sleep(0.002)

    def _claim(self, shard: int) -> bool:
        """Claims a shard to write it: under the table lock, unless it is ready or a live writer holds it."""
        with self._locked():
            row = self.table[shard]
            if row[Field.STATE] == State.READY or (row[Field.STATE] == State.WRITING and self._claim_held(shard)):
                return False
            fd = _open_own(self.path)
            if not _byte_lock(fd, shard, fcntl.F_WRLCK):
                os.close(fd)  # a writer still holds it: its table row was freed under it (cannot happen)
                return False
            self._claims[shard] = fd
            row[[Field.STATE, Field.PID, Field.STARTED, Field.PID_NAMESPACE, Field.NBYTES]] = [
                State.WRITING, os.getpid(), _started(), _pid_namespace(), 0]
            row[Field.GENERATION] += 1
            return True

    def _claim_held(self, shard: int) -> bool:
        """Whether some live process (this one's other threads included) holds the claim's byte lock."""
        query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, shard, 1, 0)
        return _FLOCK.unpack(fcntl.fcntl(self._fd, fcntl.F_OFD_GETLK, query))[0] != fcntl.F_UNLCK

    def _drop_claim(self, shard: int) -> None:
        fd = self._claims.pop(shard, None)
        if fd is not None:
            os.close(fd)  # the byte lock goes with the descriptor

    def _stalled(self, shard: int) -> str:
        row = self.table[shard]
        where = "" if row[Field.PID_NAMESPACE] == _pid_namespace() else " of another PID namespace"
        return (f"shard {shard} of {self.path} has been claimed for over {self.claim_timeout:.0f} s by pid "
                f"{int(row[Field.PID])}{where} (started {int(row[Field.STARTED])} clock ticks after boot), which "
                "holds its lock and has not written it: that process is stuck (kill it, and the next start takes over)")

    def _release(self, shard: int) -> None:
        with self._locked():
            row = self.table[shard]
            if row[Field.STATE] == State.WRITING and shard in self._claims:
                self._free(row)
            self._drop_claim(shard)

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
            self._drop_claim(shard)

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
        """Claims left by killed processes (no lock held) become free again; says whether there were any. Locked."""
        dead = [shard for shard in np.nonzero(self.table[:, Field.STATE] == State.WRITING)[0].tolist()
                if not self._claim_held(shard)]
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
            for shard in list(self._claims):  # a thread still writing: its claim is released with the arena
                self._drop_claim(shard)
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
        if path == keep or not _is_own_file(path) or not _is_own_file(path.with_suffix(".lock"), missing=True):
            continue  # another user's (in a shared folder the user chose): theirs to keep
        try:
            lock_fd = lock_exclusive(path.with_suffix(".lock"), blocking=False)
        except OSError:
            continue
        if lock_fd is None:  # busy: someone is opening or closing it
            continue
        try:
            fd = _open_own(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink()
                path.with_suffix(".lock").unlink(missing_ok=True)
                removed.append(path)
            finally:
                os.close(fd)
        except OSError:  # busy (BlockingIOError), gone meanwhile, or not ours after all
            pass
        finally:
            os.close(lock_fd)
    return removed


def _is_own_file(path: Path, missing: bool = False) -> bool:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return missing
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()


def _open_own(path: Path, create: bool = False) -> int:
    """A descriptor of this user's file at `path`, never through a symlink: created (O_EXCL, 0600) when
    `create` and absent, else opened and checked (owner, a regular file, nobody else may write it)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        if create:
            try:
                return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
        fd = os.open(path, flags)
    except OSError as e:
        if os.path.islink(path):
            raise UntrustedPath(f"{path} is a symbolic link: refusing to follow it (remove it)") from None
        raise e
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        os.close(fd)
        raise UntrustedPath(f"{path} belongs to {owner_name(info.st_uid)} (mode {stat.S_IMODE(info.st_mode):o}): "
                            "tokenmill attaches only this user's own files that nobody else can write (remove it)")
    return fd


def _byte_lock(fd: int, offset: int, kind: int) -> bool:
    """An open-file-description lock of `kind` on one byte of the file (not waiting); False when held."""
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0))
    except (BlockingIOError, PermissionError):
        return False
    return True


def _started() -> int:
    """This process's start time in clock ticks after boot (0 where /proc cannot say)."""
    return process_started() or 0


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def lock_exclusive(path: Path, blocking: bool = True) -> int | None:
    """An open descriptor holding the flock of the lock file now at `path` (close it to unlock); None
    when busy and not `blocking`. Lock files are unlinked with their arena, so after waiting, check
    that the file locked is still the one at `path`, else start over with the new one."""
    while True:
        fd = _open_own(path, create=True)
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

