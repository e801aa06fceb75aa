"""L3, the SSD decompressor: find shards (a local folder or any fsspec URL), check them and decompress
them, ahead of need in background threads (zstd and the checksum release the GIL), into L2.

Remote shards are fetched once into a local cache folder of this user's alone (schemas/trust.py), one
folder per URL named by a hash of all of it (s3://b/x_y/s and s3://b/x/y_s are two sources, not one).
Each shard is streamed into a part file of the fetching process's own, read no further than one byte
past its index entry (a store serving more cannot fill the disk) after checking that the entry fits in
the cache's free space, checked (size, checksum) and only then renamed into place: ranks fetching one
shard at once each succeed. A part file names its writer (host, PID namespace, pid and start time): a
fetch killed midway leaves one, which the next start on that host removes once its writer is dead.
The index is read within bounds (schemas.index.read_index_json) and checked before any of its names
is opened or its numbers size anything (schemas.shards.index_problems). Every problem raises
ShardError naming the shard: missing, wrong size, checksum mismatch, unreadable Arrow, wrong schema,
rows or tokens other than the index says. Never garbage, never a silent end.
"""

import contextlib
import hashlib
import json
import mmap
import os
import re
import secrets
import shutil
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from loaders.arrow_ipc import RecordBatchLayout, read_region, shard_layout
from schemas.index import INDEX_FILE, MAX_INDEX_BYTES, IndexProblem, ShardEntry, ShardIndex, read_index_json
from schemas.shards import SHARD_SCHEMA, ShardFileError, checked_shard_mapping, file_checksum, read_checked_shard
from schemas.trust import RepeatedKey, TooLarge, UntrustedPath, cache_home, is_url, open_regular_file, private_folder

FETCH_CHUNK = 4 << 20  # bytes per read of a remote shard
# A server from elsewhere may stall or trickle: a connection is given CONNECT_SECONDS, a read READ_SECONDS
# without a byte, and a whole shard MIN_FETCH_SECONDS plus a second a MIN_FETCH_RATE bytes (aiohttp's own
# default is 300 s a request, and a shard is fetched in many)
CONNECT_SECONDS, READ_SECONDS, MIN_FETCH_SECONDS, MIN_FETCH_RATE = 30, 60, 120, 1 << 20


class ShardError(RuntimeError):
    """A shard (or the index) that cannot be used; the message names it and says why."""


class ShardSource:
    """The index and the local path of each shard of one shards folder or URL. `cache_dir`: where remote
    shards are fetched (default: schemas.trust.cache_home(), ~/.cache/tokenmill)."""

    def __init__(self, location: str, cache_dir: str | None = None):
        self.location = location.rstrip("/")
        self.remote = is_url(self.location)
        if self.remote:
            self.fs, self.root, self.web = remote_fs(self.location)
            shards = private_folder(Path(cache_dir or cache_home()) / "shards", "the shards cache")
            self.cache = private_folder(shards / cache_name(self.location), "the shards cache")
            remove_dead_parts(self.cache)
        else:
            self.local = Path(self.location.removeprefix("file://"))
        self.index = self._read_index()
        self.entries = self.index.shards
        self.verified: set[int] = set()  # remote shards whose cached copy this process checked or fetched

    def _read_index(self) -> ShardIndex:
        where = f"{self.location}/{INDEX_FILE}"
        try:
            with (self._open_remote(f"{self.root}/{INDEX_FILE}", MAX_INDEX_BYTES + 1) if self.remote
                  else open_regular_file(self.local / INDEX_FILE)) as file:
                index = read_index_json(file)
        except FileNotFoundError:
            raise ShardError(f"{where}: missing (not a shards folder?)") from None
        except (TooLarge, UntrustedPath, RepeatedKey) as e:
            raise ShardError(f"{where}: {e}") from None
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ShardError(f"{where}: not JSON: {e}") from None
        except transport_errors() as e:
            raise ShardError(f"{where}: cannot be read: {type(e).__name__}: {e}") from None
        try:
            index = ShardIndex.from_json(index)
        except IndexProblem as e:
            raise ShardError(f"{where}: {e}") from None
        if not index.shards:
            raise ShardError(f"{where}: lists no shards: there is nothing to read")
        return index

    def local_path(self, shard: int) -> Path:
        """The shard on local disk (fetched into the cache first when remote)."""
        entry = self.entries[shard]
        if not self.remote:
            return self.local / entry.file
        target = self.cache / entry.file
        if target.exists() and target.stat().st_size == entry.bytes and shard not in self.verified:
            # a cached copy that is no longer the index's (the store republished the shard under its name, or
            # another index of the same URL was read): fetched again, not refused on every run for good
            if file_checksum(target, self.index.checksum_algorithm) != entry.checksum:
                target.unlink(missing_ok=True)
        if not target.exists() or target.stat().st_size != entry.bytes:
            self._fetch(entry, target)
        self.verified.add(shard)
        return target

    def _fetch(self, entry: ShardEntry, target: Path) -> None:
        """The shard streamed into the cache under a name of this call's own (others may fetch it too),
        checked against its entry, then renamed into place (atomic: a reader sees all of it or none)."""
        where = f"{self.location}/{entry.file}"
        free = shutil.disk_usage(self.cache).free
        if free < entry.bytes:
            raise ShardError(f"{where}: {entry.bytes} bytes to fetch into {self.cache}, which has {free} bytes free")
        partial = self.cache / part_name()
        try:
            size = self._copy(f"{self.root}/{entry.file}", partial, entry.bytes + 1)
            if size > entry.bytes:
                raise ShardError(f"{where}: larger than the index says ({entry.bytes} bytes): not read further")
            if size != entry.bytes:
                raise ShardError(f"{where}: fetched {size} bytes, index says {entry.bytes}")
            checksum = file_checksum(partial, self.index.checksum_algorithm)
            if checksum != entry.checksum:
                raise ShardError(f"{where}: checksum mismatch: {checksum}, index says {entry.checksum} (corrupt)")
            os.replace(partial, target)
        except FileNotFoundError:
            raise ShardError(f"{where}: missing") from None
        except transport_errors() as e:  # a server's error, a stall, a cut body, no room left
            raise ShardError(f"{where}: cannot be fetched: {type(e).__name__}: {e}") from None
        finally:
            partial.unlink(missing_ok=True)

    def _copy(self, remote: str, local: Path, limit: int) -> int:
        """At most `limit` bytes of `remote` written into the new file `local`, within the fetch's deadline;
        returns how many. The file's room is taken first (several fetches at once each passed the free-space
        check and filled the disk)."""
        copied, deadline = 0, time.monotonic() + MIN_FETCH_SECONDS + limit / MIN_FETCH_RATE
        descriptor = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with open(descriptor, "wb") as out, self._open_remote(remote, limit) as source:
            os.posix_fallocate(descriptor, 0, max(1, limit - 1))
            while copied < limit and (chunk := source.read(min(FETCH_CHUNK, limit - copied))):
                out.write(chunk)
                copied += len(chunk)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{copied} bytes in {MIN_FETCH_SECONDS + limit / MIN_FETCH_RATE:.0f} s")
            out.truncate(copied)  # (the room taken beyond what came)
        return copied

    def _open_remote(self, path: str, limit: int):
        """A remote file opened to read (at most `limit` bytes of it): from a web server as a stream, asked for
        at once (fsspec asks for its size first otherwise, and calls a 500 then "missing")."""
        return self.fs.open(path, "rb", block_size=0, size=limit) if self.web else self.fs.open(path, "rb")


def remote_fs(location: str):
    """(fsspec's filesystem of a URL, its root, whether it is a web server's). For a web server:
    timeouts (CONNECT_SECONDS, READ_SECONDS), the body as sent (asked for without Content-Encoding, and not
    decoded: 1.5 MB of gzip was 3.2 GB of memory), read as a stream (fsspec's range reads read a 206 answer
    whole, however long: 3.2 GB for an 832-byte index). Other stores as fsspec opens them."""
    import fsspec

    protocol = location.partition("://")[0].lower()
    if protocol not in ("http", "https"):
        try:
            fs, root = fsspec.core.url_to_fs(location)
        except ImportError as e:  # the store's driver is not installed (s3fs, gcsfs, ...)
            raise ShardError(f"{location}: {protocol}:// needs its fsspec driver installed: {e}") from None
        return fs, root, False
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_SECONDS, sock_read=READ_SECONDS)
    fs, root = fsspec.core.url_to_fs(location, client_kwargs={"timeout": timeout, "auto_decompress": False},
                                     headers={"Accept-Encoding": "identity"})
    return fs, root, True


def transport_errors() -> tuple[type[BaseException], ...]:
    """What reading from a store may raise: OSError (timeouts too: TimeoutError is one), and aiohttp's errors
    (a 500, a body cut short), which are not OSErrors."""
    try:
        from aiohttp import ClientError
    except ImportError:
        return (OSError,)
    return OSError, ClientError


def cache_name(location: str) -> str:
    """The cache folder of a URL: a hash of all of it, protocol included, after a readable tail for people."""
    digest = hashlib.blake2b(location.encode(), digest_size=16).hexdigest()
    tail = re.sub(r"[^A-Za-z0-9._-]+", "_", location.partition("://")[2])[-48:].lstrip("._-")
    return f"{tail}-{digest}" if tail else digest


def process_started(pid: int | str = "self") -> int | None:
    """A process's start time in clock ticks after boot (/proc/PID/stat, field 22); None when there is no
    such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _this_host() -> str:
    """This host and PID namespace, as part files name them: a pid means something only in both."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return hashlib.blake2b(f"{socket.gethostname()}/{namespace}".encode(), digest_size=6).hexdigest()


def part_name() -> str:
    """A new part file's name for this process: .HOST-PID-STARTED-RANDOM.part (no shard name: a name of 255
    bytes, which an index may hold, leaves no room for more)."""
    return f".{_this_host()}-{os.getpid()}-{process_started() or 0}-{secrets.token_hex(4)}.part"


def remove_dead_parts(folder: Path) -> list[Path]:
    """Removes the part files in `folder` whose writer was a process of this host that is gone (killed in a
    fetch): no process of its pid, or one started at another time. Other hosts' are theirs to judge."""
    removed, host = [], _this_host()
    if process_started() is None:  # no /proc: nothing can be judged
        return removed
    for path in folder.glob(".*.part"):
        written = re.fullmatch(r"\.([0-9a-f]+)-([0-9]+)-([0-9]+)-[0-9a-f]+\.part", path.name)
        if written and written[1] == host and process_started(int(written[2])) != int(written[3]):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


class ShardArrays(NamedTuple):
    """Rows of a shard (or of one record batch) as flat arrays: row i is tokens[token_offsets[i]:
    token_offsets[i + 1]] and its boundaries cu_seqlens[cu_offsets[i]:cu_offsets[i + 1]]. Offsets index
    into the values as they are: those of a record batch need not start at 0."""
    token_offsets: np.ndarray  # int32 out of Arrow, int64 in L2; rows + 1
    tokens: np.ndarray  # uint32
    cu_offsets: np.ndarray  # like token_offsets
    cu_seqlens: np.ndarray  # int32

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, cu_seqlens) of row i (views)."""
        return (self.tokens[self.token_offsets[i]:self.token_offsets[i + 1]],
                self.cu_seqlens[self.cu_offsets[i]:self.cu_offsets[i + 1]])

    @classmethod
    def of_batch(cls, batch: pa.RecordBatch) -> "ShardArrays":
        """Views of Arrow's buffers (no copy here; L2 copies once into shared memory)."""
        return cls(*_offsets_values(batch.column(0)), *_offsets_values(batch.column(1)))


class DecodedShard:
    """A shard pyarrow decompressed: its record batches' arrays, copied into an L2 run by write_into."""

    def __init__(self, batches: list[ShardArrays]):
        self.batches = batches
        self.rows = sum(len(b.token_offsets) - 1 for b in batches)
        self.tokens = sum(int(b.token_offsets[-1] - b.token_offsets[0]) for b in batches)
        self.cu = sum(int(b.cu_offsets[-1] - b.cu_offsets[0]) for b in batches)

    def write_into(self, run: ShardArrays) -> None:
        """Fills `run` (arrays of rows, tokens and cu sized by this shard, see shm_arena.run_views)."""
        _concatenate([(b.token_offsets, b.tokens) for b in self.batches], run.token_offsets, run.tokens)
        _concatenate([(b.cu_offsets, b.cu_seqlens) for b in self.batches], run.cu_offsets, run.cu_seqlens)


class CompressedShard:
    """A shard laid out as the shards job writes it (arrow_ipc.shard_layout): write_into decompresses
    its buffers straight into the L2 run, the one write of those bytes."""

    def __init__(self, where: str, mapped: mmap.mmap, batches: list[RecordBatchLayout]):
        self.where, self.mapped, self.batches = where, mapped, batches
        self.rows = sum(b.rows for b in batches)
        self.tokens = sum(b.tokens.values for b in batches)
        self.cu = sum(b.cu_seqlens.values for b in batches)

    def write_into(self, run: ShardArrays) -> None:
        data = memoryview(self.mapped)
        try:
            row = token = cu = 0
            for number, batch in enumerate(self.batches):
                for column, offsets_out, values_out, value in ((batch.tokens, run.token_offsets, run.tokens, token),
                                                               (batch.cu_seqlens, run.cu_offsets, run.cu_seqlens, cu)):
                    offsets = np.empty(batch.rows + 1, np.int32)
                    read_region(data, column.offsets, memoryview(offsets).cast("B"))
                    if offsets[0] != 0 or offsets[-1] != column.values or np.any(np.diff(offsets) < 0):
                        raise ShardError(f"{self.where}: record batch {number} has list offsets that do not rise "
                                         f"from 0 to its {column.values} values")
                    np.add(offsets, value, out=offsets_out[row:row + batch.rows + 1], casting="unsafe")
                    read_region(data, column.data, memoryview(values_out[value:value + column.values]).cast("B"))
                row, token, cu = row + batch.rows, token + batch.tokens.values, cu + batch.cu_seqlens.values
        except ValueError as e:  # read_region's, zstd's among them
            raise ShardError(f"{self.where}: {e}") from None
        finally:
            data.release()
            with contextlib.suppress(BufferError):  # an error's traceback still holds a slice: the GC unmaps
                self.mapped.close()


def read_shard(source: ShardSource, shard: int) -> DecodedShard | CompressedShard:
    """Checks one shard (size, checksum, schema, rows) and says how to decompress it into L2."""
    entry = source.entries[shard]
    path, where = source.local_path(shard), f"{source.location}/{entry.file}"
    try:
        mapped = checked_shard_mapping(path, entry, source.index.checksum_algorithm)
        if mapped is not None:  # the bytes just checked, mapped once for the checksum and the decompression
            batches = _compressed_layout(mapped)
            if batches is not None and sum(b.rows for b in batches) == entry.rows:
                try:
                    _check_counts(where, entry, [b.rows for b in batches], sum(b.tokens.values for b in batches),
                                  sum(b.cu_seqlens.values for b in batches))
                except ShardError:
                    mapped.close()
                    raise
                return CompressedShard(where, mapped, batches)
            mapped.close()
        table = read_checked_shard(path, entry)
    except ShardFileError as e:
        raise ShardError(f"{where}: {e}") from None
    decoded = DecodedShard([ShardArrays.of_batch(batch) for batch in table.to_batches()])
    _check_counts(where, entry, [len(b.token_offsets) - 1 for b in decoded.batches], decoded.tokens, decoded.cu)
    return decoded


def _check_counts(where: str, entry: ShardEntry, batch_rows: list[int], tokens: int, cu: int) -> None:
    """The shard's counts against its index entry, before anything is sized by them: its tokens, its record
    batches' rows where the index lists them (the rows a resume reads by record batch: RecordBatchReader), and
    its boundaries, a row's at most its tokens and one more."""
    if tokens != entry.tokens:
        raise ShardError(f"{where}: {tokens} tokens, index says {entry.tokens}")
    if entry.batch_rows is not None and batch_rows != list(entry.batch_rows):
        listed = list(entry.batch_rows)
        if len(batch_rows) != len(listed):
            raise ShardError(f"{where}: {len(batch_rows)} record batches, index lists {len(listed)}")
        number = next(i for i, (rows, says) in enumerate(zip(batch_rows, listed)) if rows != says)
        raise ShardError(f"{where}: record batch {number} holds {batch_rows[number]} rows, index says {listed[number]}")
    if not 0 <= cu <= entry.tokens + entry.rows:
        raise ShardError(f"{where}: {cu} sequence boundaries for {entry.rows} rows of {entry.tokens} tokens")


def _compressed_layout(mapped: mmap.mmap) -> list[RecordBatchLayout] | None:
    """The record batches of a shard laid out as the fast path reads it, else None (another layout, or
    damage pyarrow will name)."""
    try:
        reader = pa.ipc.open_file(pa.py_buffer(mapped))  # the footer only: the schema, and a check of ours
        schema, count = reader.schema, reader.num_record_batches
        with memoryview(mapped) as data:
            batches = shard_layout(data)
    except (pa.ArrowInvalid, OSError, ValueError, struct.error):
        return None
    return batches if batches is not None and schema.equals(SHARD_SCHEMA) and len(batches) == count else None


def _offsets_values(lists: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    return _view(lists.offsets, np.int32), _view(lists.values, SHARD_DTYPES[lists.type.value_type])


def _view(array: pa.Array, dtype) -> np.ndarray:
    """A NumPy view of a null-free primitive array (Array.to_numpy would import pandas on first use:
    ~0.5 s on the way to the first batch)."""
    itemsize = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * itemsize)


SHARD_DTYPES = {pa.uint32(): np.uint32, pa.int32(): np.int32}


class RecordBatchReader:
    """Rows read by decompressing only their Arrow record batch (~4 MB), for the first batch after a
    start or resume: it need not wait for whole shards (index entries list their batch_rows)."""

    def __init__(self, source: ShardSource):
        self.source = source
        self.files: dict[int, tuple[pa.ipc.RecordBatchFileReader, np.ndarray]] = {}
        self.batches: dict[tuple[int, int], ShardArrays] = {}

    def can_read(self, shard: int) -> bool:
        return self.source.entries[shard].batch_rows is not None

    def row(self, shard: int, row: int) -> tuple[np.ndarray, np.ndarray]:
        reader, starts = self._open(shard)
        number = int(np.searchsorted(starts, row, side="right")) - 1
        if (shard, number) not in self.batches:
            try:
                batch = reader.get_batch(number)
                batch.validate(full=True)  # offsets inside the values: this batch is read as it is
            except (pa.ArrowInvalid, OSError) as e:
                raise ShardError(f"{self.source.location}/{self.source.entries[shard].file}: record batch "
                                 f"{number} cannot be read: {e}") from None
            entry = self.source.entries[shard]
            if batch.num_rows != entry.batch_rows[number]:  # its rows would be another batch's
                raise ShardError(f"{self.source.location}/{entry.file}: record batch {number} holds "
                                 f"{batch.num_rows} rows, index says {entry.batch_rows[number]}")
            self.batches[(shard, number)] = ShardArrays.of_batch(batch)
        return self.batches[(shard, number)].row(row - starts[number])

    def _open(self, shard: int):
        if shard not in self.files:
            entry = self.source.entries[shard]
            path = self.source.local_path(shard)
            try:
                mapped = checked_shard_mapping(path, entry, self.source.index.checksum_algorithm)
                reader = pa.ipc.open_file(pa.py_buffer(b"" if mapped is None else mapped))  # the bytes checked
            except ShardFileError as e:
                raise ShardError(f"{self.source.location}/{entry.file}: {e}") from None
            except (pa.ArrowInvalid, OSError) as e:
                where = f"{self.source.location}/{entry.file}"
                raise ShardError(f"{where}: not a readable Arrow IPC file: {e}") from None
            if not reader.schema.equals(SHARD_SCHEMA) or reader.num_record_batches != len(entry.batch_rows):
                raise ShardError(f"{self.source.location}/{entry.file}: schema or record batches differ from the "
                                 "index")
            self.files[shard] = (reader, np.concatenate([[0], np.cumsum(entry.batch_rows)]))
        return self.files[shard]

    def clear(self) -> None:
        self.files.clear()
        self.batches.clear()


class Prefetcher:
    """Fills L2 ahead of need from background threads: request() returns at once."""

    def __init__(self, source: ShardSource, arena, threads: int = 2):
        self.source, self.arena = source, arena
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tokenmill-l3")
        self.decompressed: list[int] = []  # shards these threads decompressed (list.append is atomic)

    def request(self, shard: int) -> None:
        self.pool.submit(self._fill, shard)

    def _fill(self, shard: int) -> None:
        from loaders.shm_arena import entry_bytes  # (shm_arena imports this module)

        def decode():
            contents = read_shard(self.source, shard)
            # counted before the arena publishes the shard, so that a reader that has used it finds it counted:
            # counted after, a reader's stats could hold the node's count of it without this process's
            self.decompressed.append(entry_bytes(contents.rows, contents.tokens, contents.cu))
            return contents

        try:
            self.arena.fill(shard, decode)
        except Exception:  # the reader hits the same error when it needs the shard, and raises it there
            return

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _concatenate(batches: list[tuple[np.ndarray, np.ndarray]], offsets_out: np.ndarray,
                 values_out: np.ndarray) -> None:
    """Record batches' (offsets, values), offsets starting anywhere, as one (offsets from 0, values)."""
    row = value = 0
    for offsets, values in batches:
        n, length = len(offsets) - 1, int(offsets[-1] - offsets[0])
        np.add(offsets, value - offsets[0], out=offsets_out[row:row + n + 1], casting="unsafe")
        values_out[value:value + length] = values[offsets[0]:offsets[-1]]
        row, value = row + n, value + length
