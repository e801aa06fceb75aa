"""The text of documents another output names (a dedup cluster's members, a decontaminated document before
its cut): found in the Parquet files of the stage's input by their id column first, then only the row
groups holding them read whole; both within a byte budget."""

import glob
import itertools
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from report.scan import DAMAGED, pieces_of, plan, read

COPIES = "copies"  # in a row documents_by_id gives: how many rows of the files read hold its id
# names looked at per input specification (each comma-separated part), at most: run.json from elsewhere named
# "/" as an input, and the report searched the whole file system for Parquet files
MAX_WALK_ENTRIES = 200_000


def parquet_files(specs: list[str]) -> list[Path]:
    """The Parquet files of input specifications (folders, files, globs; comma-separated as --input takes
    them); inputs of other formats are passed over."""
    found: set[Path] = set()
    for spec in specs:
        for part in filter(None, spec.split(",")):
            matches = list(itertools.islice(glob.iglob(part), MAX_WALK_ENTRIES + 1)) if glob.has_magic(part) \
                else [part]
            if len(matches) > MAX_WALK_ENTRIES:
                continue  # which of them iglob gave first depends on the file system: none, the same every time
            left = MAX_WALK_ENTRIES  # names looked at for this part, its matches together
            for match in sorted(matches):
                path = Path(match)
                if path.is_dir():
                    files, left = _walk(path, left)
                    found.update(files)
                elif path.suffix == ".parquet" and path.is_file():
                    found.add(path)
    return sorted(found)


def parquet_files_under(folders: list[Path]) -> list[Path]:
    """The Parquet files under folders of a run (a pipeline stage's output): paths as they are, never split on
    commas as input specifications are (a stage folder from elsewhere named "x,victim" named a second one,
    outside the run); links not followed, each walked as far as MAX_WALK_ENTRIES names."""
    found: set[Path] = set()
    for folder in folders:
        if folder.is_dir() and not folder.is_symlink():
            found.update(_walk(folder, MAX_WALK_ENTRIES)[0])
    return sorted(found)


def names_within(spec: str, limit: int = MAX_WALK_ENTRIES) -> bool:
    """Whether the folders and globs of an input specification name at most `limit` names in all, looked at no
    further than that (a settings.yaml from elsewhere named "/" as a benchmark, and the report walked the
    whole file system to read it: 10 s here)."""
    left = limit
    for part in filter(None, spec.split(",")):
        matches = list(itertools.islice(glob.iglob(part), left + 1)) if glob.has_magic(part) else [part]
        left -= len(matches)
        for match in matches:
            if left >= 0 and os.path.isdir(match):
                left = _walk(Path(match), left)[1]
        if left < 0:
            return False
    return True


def _walk(folder: Path, left: int) -> tuple[list[Path], int]:
    """(the .parquet files under `folder`, folders in name order, links not followed, until `left` names
    have been looked at; the names left)."""
    found = []
    for top, folders, names in os.walk(folder):
        if left <= 0:
            break
        folders.sort()
        left -= len(folders) + len(names)
        found += [Path(top, name) for name in sorted(names) if name.endswith(".parquet")]
    return found, left


def documents_by_id(found: list[Path], ids: set[str], budget: int, max_files: int,
                    columns: tuple[str, ...] = ("id", "text", "lang", "source")) -> dict[str, dict]:
    """{id: row} of the documents of `ids` in the files `found`, as far as `budget` bytes of ids and then
    of the row groups holding them reach. An id that is not text (a number) is read as the jobs write it;
    files without an id column (the jobs named their rows by file and line) are passed over. Where an id
    names several documents the first row read is given, with COPIES: how many rows hold it."""
    if not ids or not found:
        return {}
    all_pieces = pieces_of(found, None, max_files)
    id_plan = plan(all_pieces, ["id"], budget)
    holding, spent = [], sum(p.column_bytes.get("id", 0) for p in id_plan.chosen)
    for piece in id_plan.chosen:
        piece_ids = _ids(_read(piece, ["id"]))
        if piece_ids is not None and pc.any(pc.is_in(piece_ids, value_set=_array(ids))).as_py():
            holding.append(piece)
    rows: dict[str, dict] = {}
    for piece in holding:
        cost = sum(piece.column_bytes.get(c, 0) for c in columns)
        if spent + cost > 2 * budget and rows:
            break
        spent += cost
        table = _read(piece, list(columns))
        if table is None:
            continue
        table = table.set_column(table.column_names.index("id"), "id", _ids(table))
        table = table.filter(pc.is_in(table.column("id"), value_set=_array(ids)))
        for row in table.to_pylist():
            first = rows.setdefault(row["id"], row)
            first[COPIES] = first.get(COPIES, 0) + 1
    return rows


def shared_note(row: dict | None) -> str | None:
    """What to say of a row whose id names several documents (which of them is meant cannot be told)."""
    return copies_note(row.get(COPIES, 1) if row else 1)


def copies_note(copies: int) -> str | None:
    """What to say of a document whose id `copies` documents have, or None where it is one."""
    return f"{copies} documents of the input have this id: the first is shown" if copies > 1 else None


def _read(piece, columns: list[str]) -> pa.Table | None:
    """A row group of an input, or None where it is damaged (its documents are then not at hand)."""
    try:
        return read(piece, columns)
    except DAMAGED:
        return None


def _ids(table: pa.Table | None) -> pa.ChunkedArray | None:
    """The id column (read as text by report.scan.read), or None where there is none or it is not text."""
    if table is None or "id" not in table.column_names or table.schema.field("id").type != pa.string():
        return None
    return table.column("id")


def _array(ids: set[str]) -> pa.Array:
    return pa.array(sorted(ids), pa.string())
