"""Expands `--input` (files, directories and globs, comma-separated) into the files to read."""

import glob
import os
from dataclasses import dataclass

READABLE_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet", ".txt")


class InputError(ValueError):
    """The --input argument names nothing readable; the message says which part."""


@dataclass(frozen=True, order=True)
class InputFile:
    path: str  # as the reader opens it
    relative: str  # relative to the root of the --input part it came from: stable ids across machines


def is_readable(path: str) -> bool:
    return path.endswith(READABLE_SUFFIXES)


def _glob_root(pattern: str) -> str:
    """The directory part of a glob before its first wildcard."""
    head = pattern
    while glob.has_magic(head):
        head = os.path.dirname(head)
    return head or "."


def _files_under(directory: str) -> list[str]:
    found = []
    for folder, subfolders, files in os.walk(directory):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith((".", "_")))
        # Spark and Hadoop write _SUCCESS and .crc files beside their output: not input.
        found += [os.path.join(folder, f) for f in files if is_readable(f) and not f.startswith((".", "_"))]
    return found


def expand_inputs(spec: str) -> list[InputFile]:
    """Every readable file named by `spec`, sorted, without repeats.

    A part that matches nothing, or names a file of an unknown format, is an error naming the part:
    a typo must not silently produce an empty corpus.
    """
    files: dict[str, InputFile] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if glob.has_magic(part):
            root, matches = _glob_root(part), sorted(glob.glob(part, recursive=True))
            paths = []
            for m in matches:
                paths += _files_under(m) if os.path.isdir(m) else [m] if is_readable(m) else []
        elif os.path.isdir(part):
            root, paths = part, _files_under(part)
        elif os.path.isfile(part):
            if not is_readable(part):
                raise InputError(f"{part}: unknown format (expected one of {', '.join(READABLE_SUFFIXES)})")
            root, paths = os.path.dirname(part) or ".", [part]
        else:
            raise InputError(f"{part}: no such file or directory")
        if not paths:
            raise InputError(f"{part}: matches no readable file ({', '.join(READABLE_SUFFIXES)})")
        for path in paths:
            files.setdefault(os.path.abspath(path), InputFile(os.path.abspath(path), os.path.relpath(path, root)))
    if not files:
        raise InputError("--input is empty")
    return sorted(files.values())
