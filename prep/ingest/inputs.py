"""Expands `--input` (files, directories and globs, comma-separated) into the files to read, and
`--input NAME=PATH ...` into named sources."""

import fnmatch
import glob
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from schemas.mixture import MIXTURE_FILE
from schemas.trust import is_regular_file, not_regular_why

WARC_SUFFIXES = (".warc", ".warc.gz", ".wet", ".wet.gz")  # web crawls: the extract job reads them
READABLE_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet", ".txt", *WARC_SUFFIXES)
# Names of documents in formats the jobs do not read: a folder's such files are passed over with a warning.
LOOKALIKE_SUFFIXES = (".json", ".ndjson", ".json.gz", ".ndjson.gz", ".jsonl.bz2", ".jsonl.xz", ".jsonl.zstd",
                      ".txt.gz", ".txt.zst", ".csv", ".tsv", ".arrow", ".warc.zst", ".wet.zst")
# NAME=PATH: a name is a folder name (it becomes OUT/shards/NAME); "data/a=b" has a slash before
# its "=", so it stays a path.
NAMED_INPUT = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)=(.+)")
MAX_NAME_LENGTH = 100  # a folder's name, well within the 255 bytes a file system allows
FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# What the outputs name beside the folders of sources (and of a split's values): OUT/shards/mixture.json, a
# shards folder's held-out rows (spark_stages/shards.py HELDOUT), which the report passes over as no source,
# and the files every job's run writes in its output folder (report/write.py).
RESERVED_NAMES = (MIXTURE_FILE, "heldout", "stats.json", "run.json", "settings.yaml", "report.html", "compare.html")


log = logging.getLogger(__name__)


class InputError(ValueError):
    """The --input argument names nothing readable; the message says which part."""


@dataclass(frozen=True, order=True)
class InputFile:
    path: str  # as the reader opens it
    relative: str  # from the folder the --input parts share: stable ids across machines, unique in the input


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


def _visible(name: str, pattern: str) -> bool:
    """Whether `name` may match `pattern`: a wildcard does not match a leading dot, as in glob and the shell."""
    return not name.startswith(".") or pattern.startswith(".")


def _glob(pattern: str) -> list[str]:
    """glob.glob(pattern, recursive=True) without its loops: a folder is entered once at each point of the
    pattern (by its real path), so a link back to a folder above costs nothing (with glob's, two such links made
    2**40 paths; one read every file 41 times)."""
    root = _glob_root(pattern)
    parts = [p for p in os.path.relpath(pattern, root).split(os.sep) if p] if pattern != root else []
    folders_only = pattern.endswith(os.sep)  # "corpus/*/": its folders, as glob gives them
    found, seen = [], set()

    def expand(folder: str, at: int) -> None:
        if (key := (os.path.realpath(folder), at)) in seen:
            return
        seen.add(key)
        if at == len(parts):
            if not folders_only or os.path.isdir(folder):
                found.append(folder)
            return
        part = parts[at]
        if part == "**":  # this folder, and every folder under it; ending the pattern, every file too
            expand(folder, at + 1)
            for entry in _entries(folder):
                if entry.name.startswith("."):
                    continue
                if entry.is_dir():
                    expand(entry.path, at)
                elif at + 1 == len(parts) and not folders_only:
                    found.append(entry.path)
        elif not glob.has_magic(part):
            path = os.path.join(folder, part)
            if os.path.lexists(path) and (at + 1 == len(parts) or os.path.isdir(path)):
                expand(path, at + 1)
        else:
            for entry in _entries(folder):
                if fnmatch.fnmatchcase(entry.name, part) and _visible(entry.name, part) and (
                        at + 1 == len(parts) or entry.is_dir()):
                    expand(entry.path, at + 1)

    if os.path.isdir(root):
        expand(root, 0)
    return sorted(found)


def _entries(folder: str) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:  # unreadable or gone: matches nothing, as in glob
        return []


def _files_under(directory: str) -> list[str]:
    found = []
    for folder, subfolders, files in os.walk(directory):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith((".", "_")))
        # Spark and Hadoop write _SUCCESS and .crc files beside their output: not input.
        read = [f for f in files if is_readable(f) and not f.startswith((".", "_"))]
        found += [os.path.join(folder, f) for f in read]
        # never a silent drop: a .json or a _part file is documents the user may have meant
        if passed_over := [f for f in files if f not in read and _looks_like_documents(f)]:
            log.warning("%s: %d file(s) passed over, of a format the jobs do not read or named as hidden (_ or .): "
                        "%s", folder, len(passed_over), ", ".join(passed_over[:5]) + (", ..." if len(passed_over) > 5
                                                                                     else ""))
    return found


def _looks_like_documents(name: str) -> bool:
    """A name that reads like documents: a readable suffix in any case, or another of the common ones."""
    return name.lower().endswith(READABLE_SUFFIXES + LOOKALIKE_SUFFIXES) and name not in RESERVED_NAMES


def _check_regular(path: str) -> None:
    """InputError unless `path` is (or links to) a regular file: a FIFO's open waits forever and /dev/zero has
    no end, and a folder unpacked from elsewhere may hold either under a readable name."""
    if not is_regular_file(path):
        raise InputError(f"{path}: {not_regular_why(path)}")


def input_parts(spec: str | Sequence[str]) -> list[str]:
    """The paths and globs of `spec` (a value of --input, or the values of it repeated): a value that names a
    file or folder is that path, whatever it holds (a comma, brackets); any other is split at its commas."""
    parts = []
    for value in [spec] if isinstance(spec, str) else spec:
        parts += [value] if os.path.lexists(value) else [p.strip() for p in value.split(",") if p.strip()]
    return parts


def expand_inputs(spec: str | Sequence[str]) -> list[InputFile]:
    """Every readable file named by `spec` (input_parts), sorted, each file once however many paths lead to it.

    A part that matches nothing, or names a file of an unknown format, is an error naming the part:
    a typo must not silently produce an empty corpus. A file's `relative` (its documents' ids) is its path
    from the folder all the parts' roots share: two folders' part-0.jsonl are two files.
    """
    named: list[tuple[str, str]] = []  # (path, the root of its part)
    for part in input_parts(spec):
        if os.path.lexists(part):  # a path is itself, never a pattern: "data[1].jsonl" had read data1.jsonl
            if os.path.isdir(part):
                root, paths = part, _files_under(part)
            elif not is_readable(part):
                raise InputError(f"{part}: unknown format (expected one of {', '.join(READABLE_SUFFIXES)})")
            else:
                root, paths = os.path.dirname(part) or ".", [part]
        elif glob.has_magic(part):
            root, paths, walked = _glob_root(part), [], []
            for m in _glob(part):
                if not os.path.isdir(m):
                    paths += [m] if is_readable(m) else []
                elif not part.endswith("**") and not any(m.startswith(w + os.sep) for w in walked):
                    walked.append(m)  # a folder under one walked is walked (a trailing ** matches its files itself)
                    paths += _files_under(m)
        else:
            raise InputError(f"{part}: no such file or directory")
        if not paths:
            raise InputError(f"{part}: matches no readable file ({', '.join(READABLE_SUFFIXES)})")
        named += [(path, root) for path in paths]
    if not named:
        raise InputError("--input is empty")
    base = os.path.commonpath([os.path.abspath(root) for _, root in named])
    files: dict[str, InputFile] = {}
    for path, _ in sorted(named, key=lambda pair: os.path.abspath(pair[0])):
        _check_regular(path)
        absolute = os.path.abspath(path)
        files.setdefault(os.path.realpath(path), InputFile(absolute, os.path.relpath(absolute, base)))
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


def input_roots(spec: str | Sequence[str]) -> list[str]:
    """The folders and files `spec` names (a glob's matches), for checking that an output stays apart."""
    roots = []
    for part in input_parts(spec):
        roots += [part] if os.path.lexists(part) or not glob.has_magic(part) else _glob(part)
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


def expand_sources(named: dict[str, str | Sequence[str]]) -> Sources:
    """expand_inputs of each source; errors name the source (but the one input without a name)."""
    sources = {}
    for name, spec in named.items():
        try:
            sources[name] = expand_inputs(spec)
        except InputError as e:
            raise InputError(str(e) if named.keys() == {DEFAULT_SOURCE} else f"source {name!r}: {e}") from None
    return sources
