"""numba, set up once for tokenmill's compiled kernels (MinHash, encoding).

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
