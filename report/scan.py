"""Reading a Parquet output within a byte budget, and the document sample: ids by their hash.

An output is read a row group at a time, only the columns asked for. When the columns of all its row
groups fit the budget every row is read; else row groups are taken in the order of a hash of their file's
name and position until the budget is spent, so the same output gives the same sample and a larger one
reads no more. The sample of documents is the smallest hashes of their ids among the rows read: the same
document is chosen in every stage and in every run that holds it.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

PARTS = "part-*.parquet"


def id_hash(doc_id: str | None) -> int:
    """The sample key of a document: 64 bits of its id."""
    return xxhash.xxh3_64_intdigest((doc_id or "").encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class Piece:
    """One row group of one file of an output."""
    path: Path
    row_group: int
    rows: int
    column_bytes: dict  # bytes by column name: the larger of compressed and uncompressed (footer's figures)
    partition: tuple[tuple[str, str], ...]  # (key, value) of the folders NAME=VALUE it lies in


def files(folder: Path) -> list[Path]:
    """The Parquet part files of an output, in order (partition folders included). An output folder that is a
    link is not read: a folder from elsewhere with `docs` linked to the reader's own Parquet files put their
    text into the page (rglob itself enters no linked folder below it)."""
    return sorted(folder.rglob(PARTS)) if folder.is_dir() and not folder.is_symlink() else []


# what reading a part file that is damaged (cut short, overwritten) raises: that file is passed over
DAMAGED = (pa.ArrowException, OSError)


def pieces(folder: Path, max_files: int, damaged: list | None = None) -> list[Piece]:
    """Every row group of the output's files, from their footers; past `max_files`, the files of the
    smallest hashes of their names."""
    return pieces_of(files(folder), folder, max_files, damaged)


def pieces_of(found: list[Path], root: Path | None, max_files: int, damaged: list | None = None) -> list[Piece]:
    """Every row group of the Parquet files `found` (NAME=VALUE folders under `root` as partition keys); a
    file whose footer cannot be read is passed over, (its name, why) added to `damaged`."""
    # regular files only, not links: a FIFO named as a part file blocked its open for ever, and a link can
    # lead out of an output folder from elsewhere
    found = [path for path in found if path.is_file() and not path.is_symlink()]
    if len(found) > max_files:
        found = sorted(sorted(found, key=lambda p: id_hash(p.name if root is None else str(p.relative_to(root))))
                       [:max_files])
    out = []
    for path in found:
        try:
            meta = pq.ParquetFile(path).metadata
        except DAMAGED as e:  # one file cut short costs its rows, not the output's
            if damaged is not None:
                damaged.append((shown_name(path, root), f"{type(e).__name__}: {e}"))
            continue
        inner = path.relative_to(root).parts[:-1] if root is not None else ()
        partition = tuple(tuple(part.split("=", 1)) for part in inner if "=" in part)
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            sizes = {group.column(c).path_in_schema.split(".")[0]: 0 for c in range(group.num_columns)}
            for c in range(group.num_columns):  # uncompressed too: 3 GB of repeated text is 3 MB compressed
                column = group.column(c)
                sizes[column.path_in_schema.split(".")[0]] += max(column.total_compressed_size,
                                                                  column.total_uncompressed_size)
            out.append(Piece(path, i, group.num_rows, sizes, partition))
    return out


def shown_name(path: Path, root: Path | None) -> str:
    """A part file's name as a note gives it: from its output's folder on ("rejected/part-00003.parquet")."""
    return str(path.relative_to(root.parent)) if root is not None else path.name


@dataclass(frozen=True)
class Plan:
    """The row groups read of an output, and how much of it they are."""
    chosen: list[Piece]
    rows_read: int
    rows: int
    damaged: list = field(default_factory=list)  # (file, why) of the files passed over: they could not be read

    @property
    def whole(self) -> bool:
        return self.rows_read == self.rows

    @property
    def share(self) -> float:
        return self.rows_read / self.rows if self.rows else 1.0


def plan(all_pieces: list[Piece], columns: list[str], budget: int) -> Plan:
    """All the row groups when `columns` of all of them fit `budget` bytes, else those of the smallest
    hashes of (file, position) that fit, in file order."""
    def cost(piece: Piece) -> int:
        return sum(piece.column_bytes.get(c, 0) for c in columns)

    rows = sum(p.rows for p in all_pieces)
    if sum(map(cost, all_pieces)) <= budget:
        return Plan(all_pieces, rows, rows)
    chosen, spent = [], 0
    for piece in sorted(all_pieces, key=lambda p: id_hash(f"{p.path.name}/{p.row_group}")):
        if spent + cost(piece) > budget and chosen:
            break
        chosen.append(piece)
        spent += cost(piece)
    chosen.sort(key=lambda p: (str(p.path), p.row_group))
    return Plan(chosen, sum(p.rows for p in chosen), rows)


def read(piece: Piece, columns: list[str], cap: int | None = None) -> pa.Table:
    """The piece's rows, the columns of `columns` it has (a partition key as a column of its own); with
    `cap`, only its first rows whose values decode to at most `cap` bytes together. A column stored with a
    dictionary is read as one and measured before it is decoded: the footer counts a repeated value once,
    so 100 rows of one 100 KB string are 100 KB in the footer and 10 MB decoded."""
    keys = dict(piece.partition)
    file = pq.ParquetFile(piece.path)
    present = [c for c in columns if c in file.schema_arrow.names]
    group = file.metadata.row_group(piece.row_group)
    encoded = {group.column(c).path_in_schema for c in range(group.num_columns)
               if group.column(c).has_dictionary_page and group.column(c).physical_type == "BYTE_ARRAY"}
    as_dictionary = [c for c in present if c in encoded]
    if as_dictionary:
        file = pq.ParquetFile(piece.path, read_dictionary=as_dictionary)
    table = _valid_text(_decoded(file.read_row_group(piece.row_group, columns=present), cap))
    if "id" in present and table.schema.field("id").type != pa.string():  # numbers, as the jobs write them
        try:
            table = table.set_column(table.schema.get_field_index("id"), "id", table.column("id").cast(pa.string()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # not text at all: the stage says its outputs are not as tokenmill writes them
    for key, value in keys.items():
        if key in columns and key not in present:
            table = table.append_column(key, pa.array([value] * table.num_rows, pa.string()))
    return table


def _decoded(table: pa.Table, cap: int | None) -> pa.Table:
    """`table` with its dictionary columns decoded, cut first to the rows whose values fit `cap` bytes."""
    kinds = [pa.types.is_dictionary(field.type) for field in table.schema]
    if cap is not None:
        row_bytes = np.zeros(table.num_rows, np.int64)
        for column, dictionary in zip(table.columns, kinds):
            for chunk, start in zip(column.chunks, np.cumsum([0] + [len(c) for c in column.chunks])):
                if dictionary:
                    lengths = pc.fill_null(pc.binary_length(chunk.dictionary), 0) if len(chunk.dictionary) else None
                    sizes = pc.take(lengths, chunk.indices) if lengths is not None else pa.nulls(len(chunk), pa.int64())
                elif pa.types.is_string(chunk.type) or pa.types.is_binary(chunk.type) \
                        or pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type):
                    sizes = pc.binary_length(chunk)
                else:
                    continue  # fixed width, or nested: their buffers are what was read
                row_bytes[start:start + len(chunk)] += pc.fill_null(sizes, 0).to_numpy(zero_copy_only=False)
        fits = int(np.searchsorted(np.cumsum(row_bytes), cap, side="right"))
        table = table.slice(0, fits) if fits < table.num_rows else table
    for i, dictionary in enumerate(kinds):
        if dictionary:
            column = table.column(i)
            table = table.set_column(i, table.field(i).name, pc.cast(column, column.type.value_type))
    return table


def _valid_text(table: pa.Table) -> pa.Table:
    """`table` with bytes that are not UTF-8 in its text columns replaced by U+FFFD: pyarrow does not check the
    strings it reads, and one such value of a file from elsewhere raised UnicodeDecodeError where it was
    shown."""
    for i, column in enumerate(table.columns):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        chunks, changed = [], False
        for chunk in column.chunks:
            try:
                chunk.validate(full=True)
            except pa.ArrowInvalid:
                raw = chunk.view(pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary())
                chunk = pa.array([None if b is None else b.decode("utf-8", "replace") for b in raw.to_pylist()],
                                 column.type)
                changed = True
            chunks.append(chunk)
        if changed:
            table = table.set_column(i, table.field(i), pa.chunked_array(chunks, column.type))
    return table


def scanned(folder: Path, columns: list[str], budget: int, max_files: int) -> tuple[Plan, Iterator[pa.Table]]:
    """(the plan, its tables one row group at a time) of an output's `columns` within `budget` bytes: the
    footers' bytes choose the row groups; what they decode to is held to twice the budget in all (a row
    group past it is cut, and the ones after it are not read). A damaged file is passed over and named in
    the plan's `damaged`."""
    damaged: list = []
    chosen = plan(pieces(folder, max_files, damaged), columns, budget)
    chosen.damaged.extend(damaged)

    def tables() -> Iterator[pa.Table]:
        left = 2 * budget
        failed: set[Path] = set()
        for piece in chosen.chosen:
            if left <= 0:
                return
            if piece.path in failed:
                continue
            try:
                table = read(piece, columns, left)
            except DAMAGED as e:  # its footer read, a row group not
                failed.add(piece.path)
                chosen.damaged.append((shown_name(piece.path, folder), f"{type(e).__name__}: {e}"))
                continue
            left -= table.nbytes
            yield table

    return chosen, tables()


def schema_names(folder: Path) -> list[str]:
    """The columns of an output (its first readable file's), [] when it has none."""
    for path in files(folder):
        if path.is_file() and not path.is_symlink():
            try:
                return pq.read_schema(path).names
            except DAMAGED:  # named where the output is read
                continue
    return []
