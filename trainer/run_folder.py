"""One run per run folder, and no orphans.

Rank 0 holds an exclusive lock on DIR/.run.lock for the run's life (the kernel drops it when the
process dies), with its host, pid and start time in the file: a second run on the same folder is
refused with one line naming the holder, or waits for it (`wait_for_run_dir`). Every worker asks the
kernel to kill it when its parent (the torchrun agent) dies: torchrun starts workers in sessions of
their own, so after `kill -9` of the agent they would go on training and saving checkpoints into the
folder a restarted run is using.

The folder must be this user's own, not a symbolic link, and not writable by anyone else
(schemas/trust.py): metrics, TensorBoard files and checkpoints are written into it by name, so another
user able to plant a link there would redirect them. The lock is opened without following a link,
created 0600 and checked on the open file: a lock another user could open is a lock they could hold,
refusing every later run.
"""

import contextlib
import ctypes
import fcntl
import json
import logging
import os
import signal
import socket
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch.distributed as dist

from schemas.trust import UntrustedPath, check_ancestors, check_private, owner_name

log = logging.getLogger(__name__)
LOCK_FILE = ".run.lock"
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL when the parent dies (Linux); exits at once if it already has."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def _holder(lock: int) -> str:
    try:
        held = json.loads(os.pread(lock, 4096, 0))
        return f"pid {held['pid']} on {held['host']} since {held['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


WAIT_SECONDS = 5  # between two tries for a held folder: each try is a broadcast, so no collective times out


@contextlib.contextmanager
def run_folder(run_dir: Path, rank: int, wait: bool) -> Iterator[str | None]:
    """Holds the run folder for the block (rank 0 takes the lock, every rank learns the outcome); yields
    None, or the reason the run may not start."""
    lock, untrusted = _open_lock(run_dir) if rank == 0 else (None, None)
    try:
        while True:
            outcome = [(untrusted, False) if untrusted else _take(lock, run_dir)] if rank == 0 else [None]
            dist.broadcast_object_list(outcome, src=0)
            if outcome[0][0] is None or not wait or not outcome[0][1]:
                break
            log.info("%s: waiting for the run that holds it", run_dir)
            time.sleep(WAIT_SECONDS)
        yield outcome[0][0]
    finally:
        if lock is not None:
            os.close(lock)


def _open_lock(run_dir: Path) -> tuple[int | None, str | None]:
    """(the open lock file, None), or (None, why this folder or its lock is not this user's alone)."""
    path = run_dir / LOCK_FILE
    try:
        run_dir.mkdir(mode=0o755, parents=True, exist_ok=True)  # readable, like the user's other outputs
        check_private(run_dir, "the run folder")
        check_ancestors(run_dir, "the run folder")
        lock = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except UntrustedPath as e:
        return None, str(e)
    except OSError as e:
        if os.path.islink(path):
            return None, f"{path} is a symbolic link: refusing to follow it (remove it)"
        return None, f"{e.filename or path}: {e.strerror}"
    problem = _shared(os.fstat(lock))  # the file opened, not the name: nothing can be swapped in between
    if problem is None:
        return lock, None
    os.close(lock)
    return None, f"{path} {problem}: remove it (no run of yours is using it) and start again"


def _shared(info: os.stat_result) -> str | None:
    """Why a lock file with these properties is not this user's alone; None when it is."""
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_uid != os.getuid():
        return f"belongs to {owner_name(info.st_uid)}, not to {owner_name(os.getuid())}"
    if info.st_nlink != 1:
        return f"has {info.st_nlink} names (hard links)"
    if info.st_mode & 0o066:  # whoever can open it can hold the lock, and refuse every later run
        return f"can be opened by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _take(lock: int, run_dir: Path) -> tuple[str | None, bool]:
    """(None, _) once this process holds the lock; else (why not, whether waiting for another run may help)."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return (f"{run_dir} is in use by another run ({_holder(lock)}): wait for it, choose another "
                "--run-dir, or --wait-for-run-dir"), True
    except OSError as e:  # ENOLCK (NFS without a lock manager), ENOSYS (Lustre without -o flock): a traceback
        return (f"{run_dir / LOCK_FILE} cannot be locked ({e.strerror}): a run folder needs a file system with "
                "flock (Lustre: mount with -o flock), or choose a local --run-dir"), False
    holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S")})
    try:
        os.ftruncate(lock, 0)
        os.pwrite(lock, holder.encode(), 0)
    except OSError as e:  # a full disk
        return f"{run_dir / LOCK_FILE} cannot be written ({e.strerror})", False
    return None, False
