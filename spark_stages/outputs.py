"""Job outputs that appear whole or not at all, with a checksum of their content, in folders that
hold nothing tokenmill did not write.

A job writes into OUT/_staging/ and, once everything is written, moves each output into place and
writes stats.json last. A rerun after a failure starts from an empty staging folder, so no partial
or duplicate output survives; the previous output stays in place, readable, until the new one is
complete (it is moved aside only for the renames of the commit). Intermediate files every executor
must reach (checkpoints) go to OUT/_staging/_scratch/, which is removed, never moved into place.
Spark's part files are renamed part-00000.parquet, … in partition order, so the same input gives the
same file names.

Ownership: an output folder is tokenmill's when it holds OUT/.tokenmill (OWNER_FILE), which lists
every name tokenmill wrote there. A job writes only into a new or empty folder or one of its own,
removes only names that file lists, and takes OUT/.tokenmill.lock for its whole run, so a second job
on the same output is refused (claimed_output). The runner also refuses an output that is an input,
lies inside one or holds one (check_apart).

What is reproducible is the rows: the same input and settings give the same rows in the same files
in the same order, on any number of cores or machines, but not the same bytes (Parquet's writer
lists each column chunk's encodings in an order that changes between JVMs). So each output's
`content_checksum` goes into stats.json, for users to compare runs.
"""

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from schemas import strict_json
from schemas.trust import regular_file_text
from spark_stages.session import hashable

SCRATCH = "_scratch"
STAGING = "_staging"
PREVIOUS = "_previous"  # the previous output, moved aside while the new one is renamed into place
OWNER_FILE = ".tokenmill"
LOCK_FILE = ".tokenmill.lock"
MAX_OWNER_BYTES = 64 << 20


class OutputError(ValueError):
    """An output folder tokenmill will not write: not its own, an input's, or in use by another job."""


def written_names(out: Path) -> set[str] | None:
    """The names tokenmill wrote in `out` (OWNER_FILE), or None when it is not tokenmill's."""
    if not os.path.lexists(out / OWNER_FILE):
        return None
    try:  # a link or a FIFO by that name (a folder from elsewhere) is damage, never followed or waited on
        text = regular_file_text(out / OWNER_FILE, MAX_OWNER_BYTES)
        if text is None:
            raise ValueError("not a regular file of at most 64 MiB")
        names = set(json.loads(text)["written"])
        # each a name in the folder: a record from elsewhere naming "/home/me" or "../notes" had them removed
        if odd := sorted(repr(n)[:60] for n in names if not _own_name(n)):
            raise ValueError(f"it names {odd[0]}, not a name of the folder's own")
        return names
    except (ValueError, KeyError, TypeError, RecursionError) as e:  # RecursionError: nested past Python's stack
        why = str(e)[:200] or type(e).__name__
        raise OutputError(f"{out / OWNER_FILE} is damaged ({why}): remove the folder, or choose another "
                          "output") from None


def _own_name(name) -> bool:
    return (isinstance(name, str) and name not in ("", ".", "..", OWNER_FILE, LOCK_FILE) and "/" not in name
            and "\0" not in name)


def claim_folder(out: Path) -> set[str]:
    """`out` as a folder of tokenmill's: created, or taken when empty, else refused unless it already is
    one; returns the names written there."""
    out.mkdir(parents=True, exist_ok=True)
    names = written_names(out)
    if names is not None:
        return names
    # the lock, and the first record's temporary where a job died writing it (refused, the rerun had failed)
    ours = {LOCK_FILE, f".{OWNER_FILE}.tmp"}
    strangers = sorted(p.name for p in out.iterdir() if p.name not in ours)
    if strangers:
        raise OutputError(f"{out} holds files tokenmill did not write ({', '.join(strangers[:3])}"
                          f"{', ...' if len(strangers) > 3 else ''}): choose a new or empty folder as the output")
    _record(out, set())
    return set()


def _record(out: Path, names: set[str]) -> None:
    write_json(out / OWNER_FILE, {"written": sorted(names)})


def record_written(out: Path, names: list[str]) -> None:
    """Adds `names` to what tokenmill wrote in `out` (claimed first: claim_folder), before writing them."""
    _record(out, claim_folder(out) | set(names))


def replace_layout(folder: Path, names: set[str]) -> None:
    """`folder` as tokenmill's folder of `names` (the sources' or a split's folders, and what goes beside them),
    recorded before they are written, and whatever else tokenmill wrote there removed: an earlier run's output
    of another layout (one input's OUT/clean/docs beside OUT/clean/web, read as this run's; its shards beside a
    mixture, which a loader read first) or of a source or value no longer given. Recorded, the folders are
    replaced in turn by a later run's commit of one input (which had refused them as a stranger's). Not through
    a link (another run's output), nor while a job holds the folder (`jobs.clean --output OUT/clean`)."""
    if folder.is_symlink():
        raise OutputError(f"{folder} is a link: a stage's folder of this run is its own (remove the link)")
    before = claim_folder(folder)
    with _locked(folder, within=True):
        for name in sorted(before - names):
            path = folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif os.path.lexists(path):
                path.unlink()
        _record(folder, names)


_HELD: set[str] = set()  # the folders whose lock this process holds


@contextlib.contextmanager
def _locked(folder: Path, within: bool = False) -> Iterator[None]:
    """FOLDER/.tokenmill.lock held (the kernel drops it if the process dies); OutputError when another job holds
    it. `within`: work of the job that holds it already (a split of the shards job's OUT) goes on; a second job
    of this process on it is refused as another's."""
    key = os.path.realpath(folder)
    if within and key in _HELD:
        yield
        return
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    _HELD.add(key)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise OutputError(f"{folder} is being written by another tokenmill job (pid {holder}): wait for it, "
                              "or choose another --output") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        _HELD.discard(key)
        os.close(fd)


@contextlib.contextmanager
def claimed_output(out: str) -> Iterator[None]:
    """Holds OUT/.tokenmill.lock for a job's run (the kernel drops it if the job dies); OutputError when
    another job holds it, or when OUT is not tokenmill's to write (claim_folder)."""
    folder = Path(out)
    created = not folder.exists()
    claim_folder(folder)
    try:
        with _locked(folder):
            yield
    finally:
        if created and {p.name for p in folder.iterdir()} == {OWNER_FILE, LOCK_FILE}:
            for name in (OWNER_FILE, LOCK_FILE):  # a job that stopped before writing anything leaves no folder
                (folder / name).unlink()
            folder.rmdir()


def check_apart(out: str, roots: list[str], files: list[str]) -> None:
    """OutputError when the output is one of the inputs, lies inside one (`roots`: the folders, files or
    globs' fixed parts given as input) or holds one (`files`: every input file)."""
    output = Path(out).resolve()
    for root in roots:
        where = Path(root).resolve()
        if output == where or where in output.parents:
            raise OutputError(f"--output {out} is the input {root} or lies inside it: the job would read what it "
                              "writes (choose an output outside the input)")
    for file in files:
        if output in Path(file).resolve().parents:
            raise OutputError(f"--output {out} holds the input file {file}: a rerun would replace it (choose an output "
                              "outside the input)")


def staging_dir(out: str) -> Path:
    """OUT/_staging/, empty (out claimed first: claim_folder)."""
    folder = Path(out)
    _record(folder, claim_folder(folder) | {STAGING, PREVIOUS})  # recorded before they exist: a crash leaves them ours
    staging = folder / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    return staging


def _rename_parts(folder: Path) -> None:
    """In the folder and its partition folders (source=NAME/)."""
    parts = sorted(p for p in folder.iterdir() if p.name.startswith("part-"))
    for index, part in enumerate(parts):
        part.rename(folder / f"part-{index:05d}.parquet")
    for checksum in folder.glob(".*crc"):
        checksum.unlink()
    for partition in folder.iterdir():
        if partition.is_dir() and "=" in partition.name:
            _rename_parts(partition)


def content_checksum(spark, folder: Path) -> str:
    """`ROWS:HASH` of a Parquet output: HASH is the sum (mod 2^64) over its rows of Spark's xxhash64 of
    the file name, the row's position in the file and every value. Equal for the same rows in the same
    order and files, whatever bytes the writer chose; computed on the executors."""
    from pyspark.sql import functions as F

    _rename_parts(folder)
    if not any(folder.rglob("part-*.parquet")):
        return "0:0000000000000000"
    frame = spark.read.parquet(str(folder))
    row_hash = F.xxhash64(F.col("_metadata.file_name"), F.col("_metadata.row_index"), *hashable(frame))
    rows, total = frame.agg(F.count("*"), F.sum(row_hash.cast("decimal(38,0)"))).first()
    return f"{rows}:{int(total or 0) % (1 << 64):016x}"


def checksums(spark, staging: Path, names: list[str]) -> dict[str, str]:
    return {name: content_checksum(spark, staging / name) for name in names}


def commit(staging: Path, out: str, names: list[str], stats: dict, marker: str = "stats.json") -> None:
    """Moves the outputs in place: the Spark outputs `names` and every other file in staging; `marker`
    (the stats) is written last and marks a complete output. What a previous run wrote and this one does
    not is removed (a smaller rerun leaves no stale shard behind); nothing else in OUT is touched."""
    out_path = Path(out)
    shutil.rmtree(staging / SCRATCH, ignore_errors=True)
    for name in names:
        _rename_parts(staging / name)
    new = {p.name for p in staging.iterdir()} | {marker}
    before = claim_folder(out_path)
    strangers = sorted(n for n in new if n not in before and os.path.lexists(out_path / n))
    if strangers:
        raise OutputError(f"{out}: {', '.join(strangers)} exist and tokenmill did not write them: not replaced")
    _record(out_path, before | new)  # before anything moves: a crash midway leaves every name ours
    (out_path / marker).unlink(missing_ok=True)  # first: no reader takes what follows for complete
    previous = out_path / PREVIOUS
    shutil.rmtree(previous, ignore_errors=True)
    previous.mkdir()
    for name in sorted(new - {marker}):
        if os.path.lexists(out_path / name):
            os.replace(out_path / name, previous / name)
        os.replace(staging / name, out_path / name)
    for stale in sorted(before - new - {STAGING, PREVIOUS}):  # a previous run's, not rewritten
        if os.path.lexists(out_path / stale):
            os.replace(out_path / stale, previous / stale)
    write_json(out_path / marker, stats)
    _record(out_path, new | {STAGING, PREVIOUS})
    shutil.rmtree(previous, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)  # a straggling task of a lost executor may write late


def write_json(path: Path, data: dict) -> None:
    """Whole or not at all: written beside, then renamed over `path`."""
    replace_text(path, strict_json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def replace_text(path: Path, text: str) -> None:
    """`path` written whole or not at all (replace_bytes), as UTF-8; a lone surrogate (a string from a file
    from elsewhere) is written as "?"."""
    replace_bytes(path, text.encode("utf-8", errors="replace"))


def replace_bytes(path: Path, data: bytes) -> None:
    """`path` written whole or not at all: the bytes in .NAME.tmp beside it, then renamed over it. The leading
    dot keeps the temporary off the names of folders beside it (a split's value names one:
    inputs.name_problem). The temporary is made anew and never through a link: a folder from elsewhere may
    hold one by that name, which open() would follow to overwrite any file of the user's."""
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover, or a link: removed itself, never what it points to
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(descriptor, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # a link at `path` is replaced, not followed
