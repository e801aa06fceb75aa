import contextlib
import gzip
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE


def write_lines(path: Path, lines: list, compress: str | None = None, mkdir: bool = False) -> Path:
    """Writes records (dicts become JSON, bytes and str are written as they are) one per line."""
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((json.dumps(x).encode() if isinstance(x, dict) else x if isinstance(x, bytes) else x.encode())
                    + b"\n" for x in lines)
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "zst":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


class OtherUser:
    """A second local account for tests of what another user on the node can do: commands run as an
    unused uid by `setpriv` (as root only; Python needs no passwd entry)."""

    def __init__(self, uid: int):
        self.uid = uid

    def command(self, *args: str) -> list[str]:
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", *args]

    def python(self, code: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(sys.executable, "-c", code), capture_output=True, text=True, timeout=120,
                              check=True, **kwargs)


def unused_uid(start: int = 54321) -> int:
    """The first uid from `start` with no passwd entry (one no account uses); under pytest-xdist, each test
    process its own (gw1 from start + 100), so that two tests running at once are not one other user."""
    import os
    import pwd

    start += 100 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    while True:
        try:
            pwd.getpwuid(start)
        except KeyError:
            return start
        start += 1


@pytest.fixture
def other_user() -> OtherUser:
    import os
    import shutil

    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("a second user needs root and setpriv (util-linux) to switch to an unused uid")
    return OtherUser(unused_uid())


def shared_tmp(path: Path) -> Path:
    """A folder every user may create files in, as /tmp and /dev/shm are (sticky, world-writable)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o1777)
    for parent in path.parents:  # the test's tmp_path is root's 0700: others need to pass through every folder
        # above it (under pytest-xdist, popen-gwN is 0755 while the pytest-NNN above it is 0700: stopping at the
        # first that others could pass left them outside)
        if parent != Path("/") and not parent.stat().st_mode & 0o001:
            parent.chmod(parent.stat().st_mode | 0o001)
    return path


@pytest.fixture
def refusing_language_model(monkeypatch) -> str:
    """prep.langid's model refusing any call with a line that starts with the returned word, as fastText's
    binding refuses a line with nothing it knows (the whole call raises); other calls answered as ever."""
    import prep.langid

    predict = prep.langid._predict

    def refusing(lines):
        if any(line.startswith("refused") for line in lines):
            raise ValueError("the language model found no word or character n-gram it knows")
        return predict(lines)

    monkeypatch.setattr(prep.langid, "_predict", refusing)
    return "refused"


@pytest.fixture
def parquet_batch_bytes(monkeypatch) -> list[int]:
    """The bytes of each batch that pyarrow's ParquetFile.iter_batches gives while the test runs, in order."""
    import pyarrow.parquet as pq

    seen, iter_batches = [], pq.ParquetFile.iter_batches

    def spied(self, *args, **kwargs):
        for batch in iter_batches(self, *args, **kwargs):
            seen.append(batch.nbytes)
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spied)
    return seen


@contextlib.contextmanager
def within(seconds: int):
    """Raises TimeoutError in the block after `seconds` (SIGALRM, main thread): a test of what once hung (a
    FIFO's open waits forever) fails, where it would otherwise wait with it."""
    def expired(*_):
        raise TimeoutError(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
