"""numba, set up once for tokenmill's compiled kernels (MinHash, encoding), and what they share.

Compilations are cached on disk in NUMBA_CACHE_DIR, which tokenmill sets (unless the user did) to a
folder of its own under the system's temporary folder: executors often have no writable home. A
kernel whose module runs from a real file (the driver, local mode, a node with tokenmill installed)
is compiled once and loaded from that cache by every later process; one shipped to executors inside
the job's zip cannot be cached (numba's cache for zipped code lives under ~), so each Python worker
compiles it once, on first use, and keeps it for every later task (Spark reuses its workers).
"""

import inspect
import os
import tempfile

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"tokenmill-numba-{os.getuid()}"))

import numba  # noqa: E402  (reads NUMBA_CACHE_DIR when first imported)


def kernel(function):
    """numba.njit with tokenmill's settings: no GIL held (Spark's Python workers are single-threaded,
    but the loader's threads are not), cached where the source is a file."""
    return numba.njit(cache=os.path.isfile(inspect.getfile(function)), nogil=True)(function)


@kernel
def put_utf8(c, out, n):
    """Writes code point c as UTF-8 into out from n; returns the new n."""
    if c < 0x80:
        out[n] = c
        return n + 1
    if c < 0x800:
        out[n] = 0xC0 | (c >> 6)
        out[n + 1] = 0x80 | (c & 0x3F)
        return n + 2
    if c < 0x10000:
        out[n] = 0xE0 | (c >> 12)
        out[n + 1] = 0x80 | ((c >> 6) & 0x3F)
        out[n + 2] = 0x80 | (c & 0x3F)
        return n + 3
    out[n] = 0xF0 | (c >> 18)
    out[n + 1] = 0x80 | ((c >> 12) & 0x3F)
    out[n + 2] = 0x80 | ((c >> 6) & 0x3F)
    out[n + 3] = 0x80 | (c & 0x3F)
    return n + 4
