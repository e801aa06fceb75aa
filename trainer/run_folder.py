"""One run per run folder, and no orphans.

Rank 0 holds an exclusive lock on DIR/.run.lock for the run's life (the kernel drops it when the
process dies), with its host, pid and start time in the file: a second run on the same folder is
refused with one line naming the holder, or waits for it (`wait_for_run_dir`). Every worker asks the
kernel to kill it when its parent (the torchrun agent) dies: torchrun starts workers in sessions of
their own, so after `kill -9` of the agent they would go on training and saving checkpoints into the
folder a restarted run is using.
"""

import contextlib
import ctypes
import fcntl
import json
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch.distributed as dist

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


def _holder(path: Path) -> str:
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {held['pid']} on {held['host']} since {held['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


WAIT_SECONDS = 5  # between two tries for a held folder: each try is a broadcast, so no collective times out


@contextlib.contextmanager
def run_folder(run_dir: Path, rank: int, wait: bool) -> Iterator[str | None]:
    """Holds the run folder for the block (rank 0 takes the lock, every rank learns the outcome); yields
    None, or the reason the run may not start."""
    handle = None
    if rank == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        handle = open(run_dir / LOCK_FILE, "a+", encoding="utf-8")
    try:
        while True:
            outcome = [_take(handle, run_dir) if rank == 0 else None]
            dist.broadcast_object_list(outcome, src=0)
            if outcome[0] is None or not wait:
                break
            log.info("%s: waiting for the run that holds it", outcome[0].split(":")[0])
            time.sleep(WAIT_SECONDS)
        yield outcome[0]
    finally:
        if handle is not None:
            handle.close()


def _take(handle, run_dir: Path) -> str | None:
    """None once this process holds the lock; else why not."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return (f"{run_dir} is in use by another run ({_holder(run_dir / LOCK_FILE)}): wait for it, choose another "
                "--run-dir, or --wait-for-run-dir")
    handle.truncate(0)
    handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                             "since": time.strftime("%Y-%m-%dT%H:%M:%S")}))
    handle.flush()
    return None
