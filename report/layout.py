"""What an output folder holds: one job's output, or the pipeline's stages (by source for named sources),
told apart by the files each stage writes (stats.json, report.json, index.json)."""

import contextlib
import json
import os
import stat
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from schemas.trust import is_regular_file, keys_once, regular_file_text

# The pipeline's stage folders, in the order it runs them (spark_stages/pipeline.py)
PIPELINE_ORDER = ("extract", "clean", "classifier", "quality", "dedup", "decontaminate", "tokenizer", "shards")
MAX_JSON_BYTES = 64 << 20  # a stats.json or report.json larger than this is not read
HELDOUT = "heldout"


class LayoutError(ValueError):
    """A folder that holds no output the report can read; the message says why."""


@dataclass(frozen=True)
class StageDir:
    kind: str  # one of PIPELINE_ORDER
    folder: Path
    source: str | None  # the named source, or None


def read_json(path: Path) -> dict | None:
    """A JSON object from a file (regular_file_text), or None when the file is missing, too large or not an object
    (a key given twice is not one: the loader refuses such a mixture.json, so the report does not show it)."""
    return _loaded(path)[0]


def damage(path: Path) -> str | None:
    """Why a JSON file that is there cannot be read ("cut short or not JSON: ..."), or None when it reads or
    is not there: a damaged stats.json is said to be one, not taken for a folder without tokenmill output."""
    return _loaded(path)[1]


# A report reads a stats.json four times (what the folder is, the run, the stage, its damage): 5.6 s each for
# 48 MB from elsewhere. While one is made (reading_once), each version of a file is parsed once, the parses of
# at most KEPT_PARSE_BYTES of files kept (a parse takes about four times its file: every one of six sources'
# 30 MB files kept had held 1 GB); their callers only read what they are given. A context variable: each
# thread's report its own.
KEPT_PARSE_BYTES = 16 << 20  # tokenmill's own files are a few kilobytes: all kept; one kept whatever its size


class _Parses:
    def __init__(self):
        self.by_key: OrderedDict[tuple, tuple[dict | None, str | None]] = OrderedDict()
        self.bytes = 0

    def get(self, key: tuple, path: Path) -> tuple[dict | None, str | None]:
        """The parse of `path` as `key` (its path and lstat's device, inode, size and times) names it."""
        if key in self.by_key:
            self.by_key.move_to_end(key)
            return self.by_key[key]
        found = self.by_key[key] = _parsed(path)
        self.bytes += key[3]
        while self.bytes > KEPT_PARSE_BYTES and len(self.by_key) > 1:
            oldest, _ = self.by_key.popitem(last=False)
            self.bytes -= oldest[3]
        return found


_parses: ContextVar[_Parses | None] = ContextVar("report_parses", default=None)


@contextlib.contextmanager
def reading_once():
    token = _parses.set(_Parses()) if _parses.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _parses.reset(token)


def _loaded(path: Path) -> tuple[dict | None, str | None]:
    """(the JSON object of the file, or None; why a file that is there is not read, or None)."""
    try:
        found = os.lstat(path)
    except OSError:
        return None, None
    if not stat.S_ISREG(found.st_mode):
        return None, "not a regular file: a link, a FIFO or a device is not read"
    if found.st_size > MAX_JSON_BYTES:
        return None, f"larger than {MAX_JSON_BYTES >> 20} MB, the most the report reads"
    if (kept := _parses.get()) is None:
        return _parsed(path)
    key = (os.path.abspath(path), found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    return kept.get(key, path)


def _parsed(path: Path) -> tuple[dict | None, str | None]:
    text = regular_file_text(path, MAX_JSON_BYTES)
    if text is None:
        return None, "not readable"
    try:
        data = json.loads(text, object_pairs_hook=keys_once)
    except RecursionError:  # nesting deeper than Python's stack
        return None, "nested deeper than the report reads"
    except ValueError as e:  # json's errors, a key given twice, a number of more digits than Python reads
        return None, f"cut short or not JSON: {str(e)[:200]}"
    return (data, None) if isinstance(data, dict) else (None, f"not a JSON object but a {type(data).__name__}")


def kind_of(folder: Path) -> str | None:
    """The stage whose output `folder` is, or None."""
    stats = read_json(folder / "stats.json")
    if stats is not None:
        if "templates" in stats:
            return "extract"
        if "benchmarks" in stats:
            return "decontaminate"
        if "cluster_size_histogram" in stats:
            return "dedup"
        if "rejected_by_reason" in stats:
            return "clean" if "quarantined" in stats else "quality"
    report = read_json(folder / "report.json")
    if report is not None:
        if "algorithm" in report:
            return "tokenizer"
        if "labels" in report:
            return "classifier"
    if is_regular_file(folder / "index.json"):  # a link too: a hub snapshot's files are links into its store
        return "shards"
    return None


def _folder(path: Path) -> bool:
    """Whether `path` is a folder of the run itself: a stage or source folder that is a link is not read (its
    files are someone else's, outside the run: their documents would go into the page)."""
    return path.is_dir() and not path.is_symlink()


def _shards_folder(path: Path) -> bool:
    """A folder of shards, a link too: a mixture names shards kept elsewhere by links (docs/trust.md), and
    shards hold no document text the page shows (their index's counts and file names)."""
    return path.is_dir()


def stage_dirs(out: Path) -> list[StageDir]:
    """The outputs under `out`, in the pipeline's order; LayoutError when there is none."""
    if not out.is_dir():
        raise LayoutError(f"{out} is not a folder")
    if kind := kind_of(out):
        return [StageDir(kind, out, None)]
    if mixture(out) is not None:  # the shards job's split (shards.split_by): a shards folder per value
        return [StageDir("shards", child, child.name) for child in sorted(out.iterdir())
                if _shards_folder(child) and kind_of(child) == "shards"]
    found = []
    for name in PIPELINE_ORDER:
        folder = out / name
        if not _folder(folder):
            continue
        if kind := kind_of(folder):
            found.append(StageDir(kind, folder, None))
            continue
        before = len(found)
        inside = _shards_folder if name == "shards" else _folder
        for child in sorted(p for p in folder.iterdir() if inside(p) and p.name != HELDOUT):
            if kind := kind_of(child):
                found.append(StageDir(kind, child, child.name))
        if len(found) == before and any((folder / name).is_file() for name in ("stats.json", "report.json")):
            # the stage's folder with a stats.json that cannot be read (edited, damaged): shown as what its
            # name says, so that the report tells of it rather than leave the stage out
            found.append(StageDir(name, folder, None))
    if not found:
        for name in ("stats.json", "report.json", "index.json"):
            if why := damage(out / name):  # a job's folder whose record was cut short (a disk full, a copy stopped)
                raise LayoutError(f"{out / name} is damaged ({why})")
        raise LayoutError(f"{out} holds no tokenmill output (stats.json, report.json or index.json, or the "
                          "pipeline's stage folders)")
    return found


def mixture(folder: Path) -> dict | None:
    """A shards folder's mixture.json (named sources, or shards.split_by), or None."""
    return read_json(folder / "mixture.json")
