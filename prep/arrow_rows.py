"""Python rows (dicts) as an Arrow record batch, a column at a time.

pyarrow's RecordBatch.from_pylist converts row by row: for the batches of documents that every
Spark stage's tasks build (read, cleaned, extracted), 0.44 s per 16 MB of text, where a list per
column costs 0.13 s, the same batch (measured on a bench_scale corpus file, 1,000 rows a batch).
"""

import pyarrow as pa


def rows_to_batch(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    """The batch of `rows` in `schema`, as from_pylist makes it: a key a row lacks is null."""
    return pa.RecordBatch.from_arrays([pa.array([row.get(field.name) for row in rows], field.type)
                                       for field in schema], schema=schema)
