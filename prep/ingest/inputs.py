"""Expands `--input` (files, directories and globs, comma-separated) into the files to read, and
`--input NAME=PATH ...` into named sources."""

import glob
import os
import re
from dataclasses import dataclass

from schemas.mixture import MIXTURE_FILE
from schemas.trust import is_regular_file, not_regular_why

WARC_SUFFIXES = (".warc", ".warc.gz", ".wet", ".wet.gz")  # web crawls: the extract job reads them
READABLE_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet", ".txt", *WARC_SUFFIXES)
# NAME=PATH: a name is a folder name (it becomes OUT/shards/NAME); "data/a=b" has a slash before
# its "=", so it stays a path.
NAMED_INPUT = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)=(.+)")
MAX_NAME_LENGTH = 100  # a folder's name, well within the 255 bytes a file system allows
FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# What the outputs name beside the folders of sources (and of a split's values): OUT/shards/mixture.json, a
# shards folder's held-out rows (spark_stages/shards.py HELDOUT), which the report passes over as no source,
# and the files every job's run writes in its output folder (report/write.py).
RESERVED_NAMES = (MIXTURE_FILE, "heldout", "stats.json", "run.json", "settings.yaml", "report.html", "compare.html")


class InputError(ValueError):
    """The --input argument names nothing readable; the message says which part."""


@dataclass(frozen=True, order=True)
class InputFile:
    path: str  # as the reader opens it
    relative: str  # relative to the root of the --input part it came from: stable ids across machines


def is_readable(path: str) -> bool:
    return path.endswith(READABLE_SUFFIXES)


def is_warc(path: str) -> bool:
    return path.endswith(WARC_SUFFIXES)


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


def _check_regular(path: str) -> None:
    """InputError unless `path` is (or links to) a regular file: a FIFO's open waits forever and /dev/zero has
    no end, and a folder unpacked from elsewhere may hold either under a readable name."""
    if not is_regular_file(path):
        raise InputError(f"{path}: {not_regular_why(path)}")


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
            _check_regular(path)
            files.setdefault(os.path.abspath(path), InputFile(os.path.abspath(path), os.path.relpath(path, root)))
    if not files:
        raise InputError("--input is empty")
    return sorted(files.values())


DEFAULT_SOURCE = "default"  # the name of an input given without one: one source, its outputs where they always were
Sources = dict[str, list[InputFile]]  # what every stage reads: each source's files, in the order named


def single_source(spec: str) -> Sources:
    """One input without a name: the source named DEFAULT_SOURCE."""
    return {DEFAULT_SOURCE: expand_inputs(spec)}


def is_named(sources: Sources) -> bool:
    """Whether the sources were named (`--input NAME=PATH ...`): their outputs are then by source."""
    return list(sources) != [DEFAULT_SOURCE]


def all_files(sources: Sources) -> list[InputFile]:
    return [f for files in sources.values() for f in files]


def input_roots(spec: str) -> list[str]:
    """The folders and files `spec` names (a glob's matches), for checking that an output stays apart."""
    roots = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        roots += sorted(glob.glob(part, recursive=True)) if glob.has_magic(part) else [part]
    return roots


def name_problem(name: str, reserved: tuple[str, ...] = RESERVED_NAMES) -> str | None:
    """Why `name` cannot name a source's folder (or a shards folder of a split's value), or None; with
    `reserved` empty, why it cannot be a name as `--NAME=VALUE` flags give them (a benchmark's)."""
    if not FOLDER_NAME.fullmatch(name):  # (not NAMED_INPUT on NAME=x, which "x=/../../elsewhere" matches)
        return "a name is letters, digits, '_', '.' and '-', from a letter or a digit"
    if len(name) > MAX_NAME_LENGTH:
        return f"a name is at most {MAX_NAME_LENGTH} characters"
    if name in reserved:
        return f"{', '.join(RESERVED_NAMES)} are names of tokenmill's own outputs"
    return None


def named_inputs(values: list[str]) -> dict[str, str] | None:
    """`--input NAME=PATH` values as {name: PATH}, in the order named; None when no value is named
    (bare paths: one input, see expand_inputs)."""
    matches = [NAMED_INPUT.fullmatch(value) for value in values]
    if not any(matches):
        return None
    if not all(matches):
        raise InputError(f"name every --input (NAME=PATH) or none: {values[matches.index(None)]!r} has no name")
    named: dict[str, str] = {}
    for match in matches:
        name, spec = match.groups()
        if why := name_problem(name):
            raise InputError(f"source {name[:60]!r}: {why}")
        if name in named:
            raise InputError(f"source {name!r} is named twice")
        named[name] = spec
    return named


def expand_sources(named: dict[str, str]) -> Sources:
    """expand_inputs of each source; errors name the source (but the one input without a name)."""
    sources = {}
    for name, spec in named.items():
        try:
            sources[name] = expand_inputs(spec)
        except InputError as e:
            raise InputError(str(e) if named.keys() == {DEFAULT_SOURCE} else f"source {name!r}: {e}") from None
    return sources
