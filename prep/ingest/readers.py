"""Reads input files into documents, quarantined records and file errors.

JSON Lines (plain, .gz, .zst), Parquet and .txt. Every record comes out as exactly one of:
a document (`id`, `text`, `source`, `metadata`) or a quarantined record (`error`, `file`, `line`,
`raw`). Damage to a whole file (a truncated stream, an unreadable Parquet footer) additionally
yields one FileError naming the file; the records read before the damage are kept. Bytes ignored
after the last complete frame of a compressed file yield one FileWarning; every record is kept.
"""

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from prep.ingest.inputs import InputFile, is_warc
from prep.ingest.parquet_pages import Pages, row_group_pages
from prep.ingest.streams import CHUNK_BYTES, StreamDamaged, decompressed_chunks, split_lines
from schemas.trust import valid_unicode

UTF8_BOM = b"\xef\xbb\xbf"
# A record is a value in an Arrow string column, of 2 GiB a batch, and a row of Spark's (2 GiB): with the
# readers' batches of RECORDS_BATCH_BYTES (prep/ingest/records.py), 512 MiB keeps every batch within both.
MAX_RECORD_BYTES = 512 << 20
RESERVED_FIELDS = ("id", "text", "source", "metadata")


@dataclass(frozen=True)
class ReaderConfig:
    max_record_bytes: int = 10_000_000  # larger records are quarantined, not parsed
    parquet_batch_rows: int = 1024  # rows per Parquet batch read, at most ...
    parquet_batch_bytes: int = 64 << 20  # ... and fewer where the row group's values (uncompressed) are larger
    read_bytes: int = CHUNK_BYTES  # bytes per read of a JSON Lines file (compressed bytes when compressed)

    def __post_init__(self):
        # 0 or -1, meant as no limit, quarantined every record (read_bytes 0: every file read as empty)
        if min(self.max_record_bytes, self.parquet_batch_rows, self.parquet_batch_bytes, self.read_bytes) < 1:
            raise ValueError(f"reader: max_record_bytes, parquet_batch_rows, parquet_batch_bytes and read_bytes must "
                             f"be at least 1, got {self.max_record_bytes}, {self.parquet_batch_rows}, "
                             f"{self.parquet_batch_bytes}, {self.read_bytes}")
        if self.max_record_bytes > MAX_RECORD_BYTES:
            raise ValueError(f"reader: max_record_bytes is at most {MAX_RECORD_BYTES} (a record is one value of an "
                             f"Arrow column and a Spark row), got {self.max_record_bytes}")


@dataclass
class Document:
    id: str
    text: str
    source: str
    metadata: str | None


@dataclass
class Quarantined:
    error: str
    file: str
    line: int | None
    raw: bytes | None


@dataclass
class FileError:
    file: str
    error: str


@dataclass
class FileWarning:
    file: str
    warning: str


Record = Document | Quarantined | FileError | FileWarning


def _text_problem(text) -> str | None:
    """Why a `text` value cannot be a document, or None."""
    if text is None:
        return "text is null"
    if not isinstance(text, str):
        return f"text is {type(text).__name__}, not a string"
    if "\x00" in text:
        return "text contains a NUL byte"
    if not valid_unicode(text):
        return "text contains an unpaired surrogate (not valid Unicode)"
    return None


def _json_default(value):
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def to_document(fields: dict, file: InputFile, line: int | None) -> Document | str:
    """A Document from a parsed record, or the reason it cannot be one; never raises (any error while
    reading one record is that record's reason, not the file's end)."""
    try:
        return _document(fields, file, line)
    except Exception as e:  # noqa: BLE001  (a value no rule foresaw: the record is quarantined with it)
        return f"unreadable record: {type(e).__name__}: {str(e)[:200]}"


def _document(fields: dict, file: InputFile, line: int | None) -> Document | str:
    if "text" not in fields:
        return "missing field 'text'"
    if problem := _text_problem(fields["text"]):
        return problem
    raw_id = fields.get("id")
    if raw_id is None:
        doc_id = file.relative if line is None else f"{file.relative}:{line}"
    else:
        doc_id = raw_id if isinstance(raw_id, str) else json.dumps(raw_id, default=_json_default)
        if problem := _text_problem(doc_id):
            return problem.replace("text", "id", 1)
    extra = {k: v for k, v in fields.items() if k not in RESERVED_FIELDS}
    source = fields.get("source")
    if not isinstance(source, str) or _text_problem(source):
        if source is not None:
            extra["source"] = source  # not usable as the source column, but not dropped either
        source = file.relative
    metadata = fields.get("metadata")
    if isinstance(metadata, str):  # a tokenmill output read again: metadata is a JSON object as text
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            pass
    if isinstance(metadata, dict):
        extra = {**metadata, **extra}
    elif metadata is not None:
        extra["metadata"] = metadata
    # ensure_ascii keeps odd values (lone surrogates) representable; sort_keys makes it deterministic.
    metadata_json = json.dumps(extra, ensure_ascii=True, sort_keys=True, default=_json_default) if extra else None
    return Document(doc_id, fields["text"], source, metadata_json)


def _parse_json_line(data: bytes, number: int, file: InputFile, max_bytes: int) -> Document | Quarantined:
    def quarantine(error: str) -> Quarantined:
        return Quarantined(error, file.relative, number, data)

    try:
        line = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return quarantine(f"invalid UTF-8 at byte {e.start}")
    try:
        fields = json.loads(line)
    except json.JSONDecodeError as e:
        return quarantine(f"malformed JSON: {e.msg} at column {e.colno}")
    except RecursionError:
        return quarantine("malformed JSON: nested too deeply")
    except ValueError as e:  # an integer of more digits than Python converts, ...
        return quarantine(f"malformed JSON: {str(e)[:200]}")
    if not isinstance(fields, dict):
        return quarantine(f"line is a JSON {type(fields).__name__}, not an object")
    result = to_document(fields, file, number)
    if isinstance(result, str):
        return quarantine(result)
    return _metadata_sized(result, file, number, max_bytes)


def _metadata_sized(document: Document, file: InputFile, number: int, max_bytes: int) -> Document | Quarantined:
    """The document, or quarantined where its other fields, carried as metadata (ASCII JSON, where a character
    outside ASCII takes six), are over the record limit."""
    if len(document.metadata or "") > max_bytes:
        return Quarantined(f"record over {max_bytes} bytes", file.relative, number,
                           document.metadata[: 1 << 20].encode())
    return document


def read_jsonl(file: InputFile, config: ReaderConfig) -> Iterator[Record]:
    warnings: list[str] = []
    try:
        for line in split_lines(decompressed_chunks(file.path, warnings, config.read_bytes), config.max_record_bytes):
            data = line.data
            if line.number == 1 and data.startswith(UTF8_BOM):
                data = data[len(UTF8_BOM):]
            if line.too_long:
                yield Quarantined(f"record over {config.max_record_bytes} bytes", file.relative, line.number, data)
                continue
            data = data.removesuffix(b"\r")
            if not data.strip():
                continue  # blank lines are not records
            yield _parse_json_line(data, line.number, file, config.max_record_bytes)
    except (StreamDamaged, OSError) as e:
        yield FileError(file.relative, str(e))
    for warning in warnings:
        yield FileWarning(file.relative, warning)


def read_txt(file: InputFile, config: ReaderConfig) -> Iterator[Record]:
    """One document per file."""
    try:
        with open(file.path, "rb") as f:
            data = f.read(config.max_record_bytes + 1)
    except OSError as e:
        yield FileError(file.relative, str(e))
        return
    if len(data) > config.max_record_bytes:
        yield Quarantined(f"record over {config.max_record_bytes} bytes", file.relative, None, data[: 1 << 20])
        return
    try:
        text = data.removeprefix(UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as e:
        yield Quarantined(f"invalid UTF-8 at byte {e.start}", file.relative, None, data)
        return
    result = to_document({"text": text}, file, None)
    yield Quarantined(result, file.relative, None, data) if isinstance(result, str) else result


def _raw_row(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=True, default=_json_default).encode()


def read_parquet(file: InputFile, config: ReaderConfig) -> Iterator[Record]:
    """Every row of a Parquet file (parquet_rows), each a Document or quarantined with its reason."""
    row_number = 0
    try:
        for row in parquet_rows(file.path, config.parquet_batch_rows, config.parquet_batch_bytes,
                                config.max_record_bytes):
            row_number += 1
            yield _parquet_record(row, file, row_number, config)
    except (pa.ArrowException, OSError, ValueError) as e:
        yield FileError(file.relative, f"parquet: {e}")


def parquet_rows(path: str, batch_rows: int, batch_bytes: int, max_row_bytes: int) -> Iterator[dict | str]:
    """Every row of a Parquet file as Python values, or the reason it cannot be one. A row group is read in
    batches of about `batch_bytes` by the sizes its pages give (a small file may decode to gigabytes: a
    repeated string, a dictionary); a row group whose rows are over twice `max_row_bytes` on average is passed
    over unread (huge_rows); a value Python cannot hold (a date past year 9999, an unknown time zone) is its
    row's reason, not the file's end (pyarrow converts a whole batch at once: only where that fails is each row
    converted alone). Raises what pyarrow raises for a file that is not Parquet, and PageHeaderError (a
    ValueError) for pages that cannot be read or do not add up to what the footer says."""
    parquet = pq.ParquetFile(path)
    for group in range(parquet.metadata.num_row_groups):
        meta = parquet.metadata.row_group(group)
        pages = row_group_pages(path, meta)
        if huge_rows(meta, pages, max_row_bytes):  # each row its record, as the counts of a run need
            held = f" in {meta.num_rows} rows" if meta.num_rows > 1 else ""
            reason = f"record over {max_row_bytes} bytes (its row group holds {pages.decoded}{held})"
            yield from itertools.repeat(reason, meta.num_rows)
            continue
        rows = rows_per_batch(meta, pages, batch_rows, batch_bytes)
        for batch in parquet.iter_batches(batch_size=rows, row_groups=[group]):
            try:
                yield from batch.to_pylist()
                continue
            except Exception:  # noqa: BLE001  (OverflowError, a time zone's KeyError: any value no rule foresaw)
                pass
            for i in range(batch.num_rows):
                try:
                    yield batch.slice(i, 1).to_pylist()[0]
                except Exception as e:  # noqa: BLE001
                    yield f"unreadable value: {type(e).__name__}: {str(e)[:200]}"


def huge_rows(meta, pages: Pages, max_row_bytes: int) -> bool:
    """Whether a row group (its footer's metadata, and its pages: row_group_pages) holds rows of over twice
    `max_row_bytes` on average, by what its pages decode to: one huge row, or a few (two rows of 2 GB each are
    read whole otherwise): not worth reading. (Its rows are at most its columns' values, row_group_pages makes
    sure; the footer's own total is not used here: pyarrow's says 4,262 bytes of two strings whose pages decode
    to 2,117.)"""
    return pages.decoded > 2 * max_row_bytes * max(meta.num_rows, 1)


def rows_per_batch(meta, pages: Pages, batch_rows: int, batch_bytes: int, dictionaries: bool = True) -> int:
    """Rows of a row group (its footer's metadata, and its pages: row_group_pages) read at a time for batches
    of about `batch_bytes`: by what its pages decode to (the footer's sum where larger: a crafted footer may
    claim a kilobyte for gigabytes) and, with `dictionaries`, by its dictionaries of strings (the pages count
    a dictionary's values once, and every row may hold its largest: 1,000 rows of one 512 KB string from a
    500-byte file decoded to one batch of 524 MB)."""
    decoded = max(meta.total_byte_size, pages.decoded, 1)
    entries = pages.dictionaries if dictionaries else 0
    return max(1, min(batch_rows, batch_bytes * meta.num_rows // decoded, batch_bytes // max(entries, 1)))


def _parquet_record(row: dict | str, file: InputFile, row_number: int, config: ReaderConfig) -> Record:
    if isinstance(row, str):
        return Quarantined(row, file.relative, row_number, None)
    text = row.get("text")
    # The limit is in bytes; a character takes at most 4, so most texts are cleared unencoded.
    if isinstance(text, str) and 4 * len(text) > config.max_record_bytes:
        if len(text.encode("utf-8", "replace")) > config.max_record_bytes:
            return Quarantined(f"record over {config.max_record_bytes} bytes", file.relative, row_number,
                               text[: 1 << 18].encode("utf-8", "replace"))
    result = to_document(row, file, row_number)
    if isinstance(result, str):
        return Quarantined(result, file.relative, row_number, _raw_row(row))
    return _metadata_sized(result, file, row_number, config.max_record_bytes)


def read_file(file: InputFile, config: ReaderConfig = ReaderConfig()) -> Iterator[Record]:
    """Every record of one input file; never raises for bad content."""
    if is_warc(file.path):
        return iter([FileError(file.relative, "a WARC file: its pages become documents by jobs.extract (the "
                                              "pipeline runs it first for a source of WARC files)")])
    if file.path.endswith(".parquet"):
        return read_parquet(file, config)
    if file.path.endswith(".txt"):
        return read_txt(file, config)
    return read_jsonl(file, config)
