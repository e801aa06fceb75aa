"""numba, set up once for tokenmill's compiled kernels (MinHash, encoding, the Unigram lattice), and
what they share: text as code points (from Python strings or straight from Arrow's UTF-8), and UTF-8 out.

Compilations are cached on disk in NUMBA_CACHE_DIR, which tokenmill sets (unless the user did) to a
folder of its own in the user's cache, ~/.cache/tokenmill/numba ($XDG_CACHE_HOME/tokenmill/numba):
found from the user's home, not at a name in the shared temporary folder that another user could take
first (a folder planted at /tmp/tokenmill-numba-UID once stopped every job of its user). That folder
is this user's alone (0700, checked: schemas/trust.py): numba reads its index files with pickle, so a
folder another user made or can write would run their code in this user's process. Where the home
cannot hold it (some executors have none to write), schemas.trust.cache_home falls back to the
temporary folder, with a warning. A kernel whose module runs from a real file (the driver, local
mode, a node with tokenmill installed) is compiled once and loaded from that cache by every later
process; one shipped to executors inside the job's zip cannot be cached (numba's cache for zipped
code lives under ~), so each Python worker compiles it once, on first use, and keeps it for every
later task (Spark reuses its workers).
"""

import inspect
import os

from schemas.trust import cache_home, private_folder

if "NUMBA_CACHE_DIR" not in os.environ:  # a user's own choice is theirs
    os.environ["NUMBA_CACHE_DIR"] = str(private_folder(cache_home() / "numba", "numba's cache folder"))

import numba  # noqa: E402  (reads NUMBA_CACHE_DIR when first imported)
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402


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


def code_points_of(texts: "list[str] | pa.StringArray") -> tuple[np.ndarray, np.ndarray]:
    """(uint32 code points of every text one after another, int64 starts [len(texts) + 1]). An Arrow
    string column is decoded from its UTF-8 buffer in one pass: no Python string per document."""
    if not isinstance(texts, pa.Array):
        starts = np.zeros(len(texts) + 1, np.int64)
        np.cumsum([len(t) for t in texts], out=starts[1:])
        return np.frombuffer("".join(texts).encode("utf-32-le"), np.uint32), starts
    if texts.null_count:
        raise ValueError(f"{texts.null_count} null texts: documents have text")
    if texts.type == pa.string():
        width = np.int32
    elif texts.type == pa.large_string():
        width = np.int64
    else:
        raise TypeError(f"expected an Arrow string array, got {texts.type}")
    _, offsets, data = texts.buffers()
    offsets = np.frombuffer(offsets, width, len(texts) + 1, texts.offset * np.dtype(width).itemsize)
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    code_points = np.empty(int(offsets[-1] - offsets[0]), np.uint32)
    starts = np.empty(len(texts) + 1, np.int64)
    return code_points[:_decode_utf8(data, offsets, code_points, starts)], starts


@kernel
def _decode_utf8(data, offsets, out, starts):
    """The code points of valid UTF-8 (Arrow guarantees it) data[offsets[i]:offsets[i + 1]] into out,
    each text's first at starts[i]; returns how many."""
    n = 0
    for d in range(len(offsets) - 1):
        starts[d] = n
        i, end = offsets[d], offsets[d + 1]
        while i < end:
            b = np.uint32(data[i])
            if b < 0x80:
                out[n] = b
                i += 1
            elif b < 0xE0:
                out[n] = (b & 0x1F) << 6 | (data[i + 1] & 0x3F)
                i += 2
            elif b < 0xF0:
                out[n] = (b & 0x0F) << 12 | (data[i + 1] & 0x3F) << 6 | (data[i + 2] & 0x3F)
                i += 3
            else:
                out[n] = ((b & 0x07) << 18 | (data[i + 1] & 0x3F) << 12 | (data[i + 2] & 0x3F) << 6
                          | (data[i + 3] & 0x3F))
                i += 4
            n += 1
    starts[len(offsets) - 1] = n
    return n
