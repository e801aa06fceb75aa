"""Pages extracted in a child process, so that no page costs more than its time budget, whatever its markup.

A parser cannot be stopped from Python while it runs in C, and lexbor (under resiliparse) is quadratic on
shapes of markup a hostile page can repeat (thousands of <option> in a <select>, <a><b> over and over):
one page of 1 MB took 54 s, and a page at the 10 MB payload limit would take hours. So the extraction runs in
a forked child that the task feeds one page at a time; a page that takes longer than `seconds` is killed
with its process and reported (PageOverBudget), and the next page gets a fresh child. The child's memory is
bounded too (RLIMIT_DATA: what it had at the fork and `memory_bytes` more): a page of 170 KB that makes lexbor
clone a thousand open formatting elements at every paragraph grew a child past 5 GB in its 10 s. A crash of
the parser (a segmentation fault, an allocation refused) costs that page alone the same way. The child dies
with its parent.

Feeding a page through a pipe costs a few tens of microseconds against milliseconds of extraction.
"""

import ctypes
import multiprocessing
import resource
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
Extract = Callable[[bytes, "str | None"], tuple]


class PageOverBudget(Exception):
    """A page whose extraction ran past its time budget, or took its process down; the message says which."""


class ExtractionFailed(Exception):
    """The extractor raised on a page; the message is its exception's type and message."""


class PageWorker:
    """Calls `extract(body, declared)` in a child process, at most `seconds` a page and `memory_bytes` of heap
    more than the child was forked with (None: no bound)."""

    def __init__(self, extract: Extract, seconds: float, memory_bytes: int | None = None):
        self.extract, self.seconds, self.memory_bytes = extract, seconds, memory_bytes
        self._process, self._conn = None, None

    def __call__(self, body: bytes, declared: str | None) -> tuple:
        if self._process is None:
            self._start()
        try:
            self._conn.send_bytes(body)
            self._conn.send(declared)
        except OSError:  # the child died taking the page (a page past its memory budget) or before it
            code = self._stop()
            raise PageOverBudget(f"its extracting process died taking the page's {len(body):,} bytes (exit code "
                                 f"{code}; extract.page_memory_bytes)") from None
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
            target=_serve, args=(theirs, ours, self.extract, self.memory_bytes), daemon=True,
            name="tokenmill-page-worker")
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


def _serve(conn, parents_end, extract: Extract, memory_bytes: int | None) -> None:
    """The child: one page in, (failed, text and codec or the error) out, until the parent hangs up."""
    parents_end.close()  # its copy of the parent's end would keep the pipe open after the parent died
    if sys.platform.startswith("linux"):  # a task killed outright takes its child with it
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if memory_bytes is not None:
            _bound_heap(memory_bytes)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    peak_at_start = _status_kb("VmPeak")
    while True:
        try:
            body = conn.recv_bytes()
            declared = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer = (False, extract(body, declared))
        except Exception as e:  # noqa: BLE001  (a page no rule foresaw: the parent quarantines it)
            # an allocation refused at the budget surfaces as whatever the parser makes of it ("Failed to parse")
            grew = (_status_kb("VmPeak") - peak_at_start) * 1024
            at_budget = memory_bytes is not None and grew >= memory_bytes // 2
            answer = (True, f"{type(e).__name__}: {str(e)[:200]}" + (
                f" (at its memory budget, {memory_bytes:,} bytes: extract.page_memory_bytes)" if at_budget else ""))
        conn.send(answer)


def _bound_heap(memory_bytes: int) -> None:
    """Limits the process's data segment and private writable mappings (RLIMIT_DATA, which malloc's large
    allocations count against, unlike the executor's file mappings) to what it has now and `memory_bytes` more."""
    limit = _status_kb("VmData") * 1024 + memory_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def _status_kb(field: str) -> int:
    """A field of /proc/self/status in kB (0 where there is none: not Linux)."""
    try:
        with open("/proc/self/status") as status:
            return next((int(line.split()[1]) for line in status if line.startswith(f"{field}:")), 0)
    except OSError:
        return 0
