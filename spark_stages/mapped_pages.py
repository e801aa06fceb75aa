"""Dropping the pages of a read-only file mapping from this process's resident set.

A packing task maps every encoding task's file and reads its groups' slices of each: the pages it
touched stay in its resident set for as long as the mapping lives, so a task's RSS grew with the
number and size of the encoded files (the corpus), not with its group. MADV_DONTNEED on a file
mapped read-only drops them from this process only: they stay in the page cache, and a later read
maps them back in.
"""

import ctypes
import mmap

import pyarrow as pa

MADV_DONTNEED = 4
_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def whole_mapping(source: pa.MemoryMappedFile) -> pa.Buffer:
    """The whole file as one buffer of its mapping (zero copy): what release_pages takes."""
    source.seek(0)
    return source.read_buffer()


def release_pages(mapping: pa.Buffer) -> bool:
    """Drops the resident pages of `mapping` (whole_mapping of a pa.memory_map opened read-only) from
    this process; False when the kernel refuses. Never for anonymous memory: it would zero it."""
    if not mapping.size:
        return True
    start = mapping.address // mmap.PAGESIZE * mmap.PAGESIZE  # a mapping starts on a page
    return _libc.madvise(start, mapping.address + mapping.size - start, MADV_DONTNEED) == 0
