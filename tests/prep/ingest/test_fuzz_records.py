"""Property-based fuzzing of the input readers: JSON lines of any bytes and any JSON (nested past recursion,
numbers of a million digits, surrogates, NULs, a byte order mark, lines past the record limit) and Parquet
rows of any types. Every line or row is exactly one document or one quarantined record with its reason;
a damaged file is one file error; no exception escapes."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.ingest.inputs import InputFile
from prep.ingest.readers import Document, FileError, FileWarning, Quarantined, ReaderConfig, read_file

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])
LIMIT = 4096
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)
HOSTILE_LINES = st.sampled_from([
    b'{"text": "ok"}', b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", b'{"text": "x", "n": ' + b"9" * 1_000_000
    + b"}", b'{"text": "\\ud800"}', b'{"text": "a\\u0000b"}', b"\xef\xbb\xbf{\"text\": \"bom\"}", b'{"text": 1e999999}',
    b'{"text": "' + b"x" * (LIMIT + 1) + b'"}', b"\xff\xfe{}", b'["text"]', b'{"id": {"a": [1, 2]}, "text": "t"}',
    b'{"text": "t", "metadata": "{\\"a\\": 1}"}', b'{"text": "t", "source": 7}', b"", b"   ", b"\r"])


@st.composite
def jsonl_lines(draw) -> list[bytes]:
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        choice = draw(st.integers(0, 3))
        if choice == 0:
            lines.append(draw(HOSTILE_LINES))
        elif choice == 1:
            value = draw(st.dictionaries(st.sampled_from(["text", "id", "source", "metadata", "x"]), JSON_VALUES,
                                         max_size=4))
            lines.append(json.dumps(value, allow_nan=True).encode())
        else:
            lines.append(draw(st.binary(max_size=80)).replace(b"\n", b" "))
    return lines


@FUZZ
@given(jsonl_lines(), st.sampled_from(["", ".gz", ".zst"]))
def test_every_json_line_is_a_document_or_quarantined_with_its_reason(tmp_path_factory, lines, suffix):
    import gzip

    import zstandard

    data = b"\n".join(lines) + b"\n"
    data = {"": lambda d: d, ".gz": gzip.compress, ".zst": zstandard.ZstdCompressor().compress}[suffix](data)
    path = tmp_path_factory.mktemp("jsonl") / f"fuzz.jsonl{suffix}"
    path.write_bytes(data)
    records = list(read_file(InputFile(str(path), path.name), ReaderConfig(max_record_bytes=LIMIT)))
    assert not any(isinstance(r, FileError) for r in records)
    read = [r for r in records if isinstance(r, (Document, Quarantined))]
    lines = [lines[0].removeprefix(b"\xef\xbb\xbf"), *lines[1:]]  # a byte order mark opens the file alone
    records_in = [line for line in lines if line.strip()]
    assert len(read) == len(records_in)
    for record in read:
        if isinstance(record, Quarantined):
            assert record.error and record.line is not None
        else:
            assert isinstance(record.text, str) and isinstance(record.id, str)
    assert all(isinstance(r, (Document, Quarantined, FileWarning)) for r in records)


ARROW_TYPES = st.sampled_from([pa.string(), pa.large_string(), pa.binary(), pa.int64(), pa.float64(), pa.bool_(),
                               pa.list_(pa.string()), pa.struct([("a", pa.int32())]), pa.timestamp("ms"),
                               pa.dictionary(pa.int32(), pa.string()), pa.null()])


def _column(draw, kind: pa.DataType, rows: int) -> pa.Array:
    if pa.types.is_dictionary(kind):
        return pa.array(draw(st.lists(st.sampled_from(["a", "b" * 5000, ""]) | st.none(), min_size=rows,
                                      max_size=rows)), pa.string()).dictionary_encode()
    if kind in (pa.string(), pa.large_string()):
        values = st.text(max_size=30) | st.sampled_from(["x" * (LIMIT + 1), "a\x00b", "ok"]) | st.none()
    elif kind == pa.binary():
        values = st.binary(max_size=30) | st.none()
    elif kind == pa.int64():
        values = st.integers(-(2 ** 63), 2 ** 63 - 1) | st.none()
    elif kind == pa.float64():
        values = st.floats() | st.none()
    elif kind == pa.bool_():
        values = st.booleans() | st.none()
    elif kind == pa.timestamp("ms"):
        values = st.integers(-(2 ** 40), 2 ** 40) | st.none()
    elif pa.types.is_list(kind):
        values = st.lists(st.text(max_size=5), max_size=3) | st.none()
    elif pa.types.is_struct(kind):
        values = st.fixed_dictionaries({"a": st.integers(-5, 5)}) | st.none()
    else:
        values = st.none()
    return pa.array(draw(st.lists(values, min_size=rows, max_size=rows)), type=kind)


@st.composite
def parquet_tables(draw) -> pa.Table:
    rows = draw(st.integers(0, 20))
    names = draw(st.lists(st.sampled_from(["text", "id", "source", "metadata", "x", "y"]), min_size=1, max_size=5,
                          unique=True))
    return pa.table({name: _column(draw, draw(ARROW_TYPES), rows) for name in names})


@FUZZ
@given(parquet_tables(), st.booleans())
def test_every_parquet_row_is_a_document_or_quarantined_with_its_reason(tmp_path_factory, table, damaged):
    path = tmp_path_factory.mktemp("parquet") / "fuzz.parquet"
    sink = io.BytesIO()
    pq.write_table(table, sink)
    data = sink.getvalue()
    path.write_bytes(data[: len(data) // 2] if damaged else data)
    records = list(read_file(InputFile(str(path), path.name), ReaderConfig(max_record_bytes=LIMIT)))
    errors = [r for r in records if isinstance(r, FileError)]
    rows = [r for r in records if isinstance(r, (Document, Quarantined))]
    if damaged:
        assert errors and "parquet" in errors[0].error
    else:
        assert not errors and len(rows) == table.num_rows
    for record in rows:
        if isinstance(record, Quarantined):
            assert record.error
        else:
            assert len(record.text.encode()) <= LIMIT and len(record.metadata or "") <= LIMIT
