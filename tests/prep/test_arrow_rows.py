"""rows_to_batch makes the batches pyarrow's from_pylist makes, for the schemas the tasks build."""

import pyarrow as pa
import pytest

from prep.arrow_rows import rows_to_batch
from prep.clean import CLEAN_RESULT_SCHEMA
from prep.ingest.records import READ_SCHEMA
from schemas.documents import WEB_DOCUMENT_SCHEMA, WEB_QUARANTINE_SCHEMA

VALUES = {pa.string(): ["", "文本 ☃", "a\x00b"], pa.int64(): [0, -1, 2**62], pa.int32(): [0, 7, -(2**31)],
          pa.float32(): [0.0, 0.5, 1e-30], pa.binary(): [b"", b"\xff\xfe", b"x" * 100]}


@pytest.mark.parametrize("schema", [READ_SCHEMA, CLEAN_RESULT_SCHEMA, WEB_DOCUMENT_SCHEMA, WEB_QUARANTINE_SCHEMA])
def test_the_same_batch_as_from_pylist(schema):
    rows = []
    for i in range(9):
        row = {f.name: VALUES[f.type][i % 3] for f in schema}
        for j, f in enumerate(schema):  # nullable fields null or missing in some rows
            if f.nullable and (i + j) % 4 == 0:
                row[f.name] = None
            elif f.nullable and (i + j) % 4 == 1:
                del row[f.name]
        rows.append(row)
    ours, theirs = rows_to_batch(rows, schema), pa.RecordBatch.from_pylist(rows, schema=schema)
    assert ours.schema == theirs.schema and ours.equals(theirs) and ours.to_pylist() == theirs.to_pylist()
    assert rows_to_batch([], schema).equals(pa.RecordBatch.from_pylist([], schema=schema))


def test_a_wrong_value_is_an_error_as_in_from_pylist():
    row = {"status": "doc", "file_index": "not a number", "record_index": 0}
    with pytest.raises(pa.ArrowInvalid):
        pa.RecordBatch.from_pylist([row], schema=READ_SCHEMA)
    with pytest.raises(pa.ArrowInvalid):
        rows_to_batch([row], READ_SCHEMA)
