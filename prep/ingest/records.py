"""Input files as Arrow record batches in READ_SCHEMA: what every Spark job's read stage yields (the
cleaning rules are not needed to read, so reading imports none of them)."""

from collections.abc import Iterable, Iterator

import pyarrow as pa

from prep.arrow_rows import rows_to_batch
from prep.ingest.inputs import InputFile
from prep.ingest.readers import Document, FileError, FileWarning, Quarantined, ReaderConfig, read_file
from schemas import DOCUMENT_SCHEMA, QUARANTINE_SCHEMA

RECORDS_BATCH_BYTES = 64 << 20

# What reading produces: one row per record (status "doc" or "quarantined"), per damaged file
# ("file_error") or per thing ignored in a file ("file_warning", its text in `error`), with the
# position of the record in the input, which fixes the output order.
READ_SCHEMA = pa.schema(
    [pa.field("status", pa.string(), nullable=False),
     pa.field("file_index", pa.int32(), nullable=False),  # position of the file in the sorted input
     pa.field("record_index", pa.int64(), nullable=False)]  # position of the record in its file
    + [f.with_nullable(True) for f in DOCUMENT_SCHEMA]
    + [f.with_nullable(True) for f in QUARANTINE_SCHEMA]
)


def _read_row(record, file_index: int, record_index: int) -> dict:
    row = {"file_index": file_index, "record_index": record_index}
    if isinstance(record, Document):
        return {**row, "status": "doc", "id": record.id, "text": record.text, "source": record.source,
                "metadata": record.metadata}
    if isinstance(record, Quarantined):
        return {**row, "status": "quarantined", "error": record.error, "file": record.file, "line": record.line,
                "raw": record.raw}
    if isinstance(record, FileWarning):
        return {**row, "status": "file_warning", "error": record.warning, "file": record.file}
    assert isinstance(record, FileError)
    return {**row, "status": "file_error", "error": record.error, "file": record.file}


def _row_bytes(row: dict) -> int:
    """About what a row holds (characters of text are counted as bytes): for sizing batches."""
    return sum(len(row.get(key) or "") for key in ("text", "metadata", "raw"))


def read_records(files: Iterable[tuple[int, InputFile]], cfg: ReaderConfig, batch_rows: int = 512,
                 batch_bytes: int = RECORDS_BATCH_BYTES) -> Iterator[pa.RecordBatch]:
    """Arrow batches in READ_SCHEMA for (file index, file) pairs: `batch_rows` rows, or fewer once they hold
    `batch_bytes` (512 records of 4 MB had made one batch past the 2 GiB an Arrow string column holds)."""
    rows, size = [], 0
    for file_index, file in files:
        for record_index, record in enumerate(read_file(file, cfg)):
            rows.append(row := _read_row(record, file_index, record_index))
            size += _row_bytes(row)
            if len(rows) >= batch_rows or size >= batch_bytes:
                yield rows_to_batch(rows, READ_SCHEMA)
                rows, size = [], 0
    if rows:
        yield rows_to_batch(rows, READ_SCHEMA)
