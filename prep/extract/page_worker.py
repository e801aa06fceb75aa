"""Pages extracted in a child process, so that no page costs more than its time budget, whatever its markup.

A parser cannot be stopped from Python while it runs in C, and lexbor (under resiliparse) is quadratic on
shapes of markup a hostile page can repeat (thousands of <option> in a <select>, <a><b> over and over):
one page of 1 MB took 54 s, and a page at the 10 MB payload limit would take hours. So the extraction runs in
a forked child that the task feeds one page at a time; a page that takes longer than `seconds` is killed
with its process and reported (PageOverBudget), and the next page gets a fresh child. A crash of the parser
(a segmentation fault, the memory killer) costs that page alone the same way. The child dies with its parent.

Feeding a page through a pipe costs a few tens of microseconds against milliseconds of extraction.
"""

import ctypes
import multiprocessing
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
Extract = Callable[[bytes, "str | None"], tuple[str, str]]


class PageOverBudget(Exception):
    """A page whose extraction ran past its time budget, or took its process down; the message says which."""


class ExtractionFailed(Exception):
    """The extractor raised on a page; the message is its exception's type and message."""


class PageWorker:
    """Calls `extract(body, declared)` in a child process, at most `seconds` a page."""

    def __init__(self, extract: Extract, seconds: float):
        self.extract, self.seconds = extract, seconds
        self._process, self._conn = None, None

    def __call__(self, body: bytes, declared: str | None) -> tuple[str, str]:
        if self._process is None:
            self._start()
        self._conn.send_bytes(body)
        self._conn.send(declared)
        if not self._conn.poll(self.seconds):
            self._stop()
            raise PageOverBudget(f"took longer than {self.seconds:g} s (extract.page_seconds)")
        try:
            failed, value = self._conn.recv()
        except (EOFError, OSError):
            code = self._stop()
            raise PageOverBudget(f"its extracting process died (exit code {code})") from None
        if failed:
            raise ExtractionFailed(value)
        return value

    def _start(self) -> None:
        # fork: the child has the parent's imports (the extractor, resiliparse) at no cost, and needs nothing pickled
        ours, theirs = multiprocessing.get_context("fork").Pipe()
        self._process = multiprocessing.get_context("fork").Process(
            target=_serve, args=(theirs, ours, self.extract), daemon=True, name="tokenmill-page-worker")
        self._process.start()
        theirs.close()
        self._conn = ours

    def _stop(self) -> int | None:
        """Kills the child (if still there); returns its exit code."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is None:
            return None
        conn.close()
        process.kill()
        process.join()
        code = process.exitcode
        process.close()
        return code

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> "PageWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _serve(conn, parents_end, extract: Extract) -> None:
    """The child: one page in, (failed, text and codec or the error) out, until the parent hangs up."""
    parents_end.close()  # its copy of the parent's end would keep the pipe open after the parent died
    if sys.platform.startswith("linux"):  # a task killed outright takes its child with it
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            body = conn.recv_bytes()
            declared = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer = (False, extract(body, declared))
        except Exception as e:  # noqa: BLE001  (a page no rule foresaw: the parent quarantines it)
            answer = (True, f"{type(e).__name__}: {str(e)[:200]}")
        conn.send(answer)
