"""prep/ingest/parquet_pages.py: what a row group's pages decode to, by their own headers; a footer that claims
less is not believed, and a header that cannot be read is a clear error, whatever its bytes."""

import io
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.ingest.inputs import InputFile
from prep.ingest.parquet_pages import PageHeader, PageHeaderError, _page_header, row_group_pages
from prep.ingest.readers import ReaderConfig, parquet_rows, read_file
from spark_stages.ingest import _matching, parquet_documents
from tests.prep.ingest.parquet_craft import I32, data_page, parquet_file, struct


def read(path) -> list:
    return list(read_file(InputFile(str(path), path.name), ReaderConfig()))


def _table(rows: int) -> pa.Table:
    return pa.table({"id": [f"d{i}" for i in range(rows)], "text": [f"word {i} " * 40 for i in range(rows)],
                     "n": list(range(rows)), "tags": [["a", str(i)] for i in range(rows)]})


@pytest.mark.parametrize("compression", ["zstd", "snappy", "gzip", "none"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_the_pages_of_every_kind_of_file_decode_to_what_its_footer_says(tmp_path, compression, version, dictionary):
    path = tmp_path / "in.parquet"
    pq.write_table(_table(3000), path, compression=compression, data_page_version=version,
                   use_dictionary=dictionary, row_group_size=1000, data_page_size=16 << 10)
    parquet = pq.ParquetFile(path)
    for group in range(parquet.num_row_groups):
        meta = parquet.metadata.row_group(group)
        pages = row_group_pages(str(path), meta)
        assert 0.95 * meta.total_byte_size <= pages.decoded <= meta.total_byte_size  # less its pages' headers
        assert (pages.dictionaries > 0) == dictionary


def _claiming_less(path, claimed_over: int) -> int:
    """Rewrites the footer of a file of one row group so that its total_byte_size claims less (the same number
    of bytes in the footer: the smallest number its varint can hold); returns what it now claims."""
    data = bytearray(path.read_bytes())
    footer_length = int.from_bytes(data[-8:-4], "little")
    footer = len(data) - 8 - footer_length
    size = pq.ParquetFile(path).metadata.row_group(0).total_byte_size
    varint, value = bytearray(), size << 1  # zigzag
    while True:
        varint.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not varint[-1] & 0x80:
            break
    field = bytes([0x16]) + bytes(varint)  # RowGroup's field 2 (after field 1, its columns), an i64
    at = data.index(field, footer)
    assert data.count(field, footer) == 1
    smallest = 1 << 7 * (len(varint) - 1)  # zigzag of the smallest number of as many bytes
    data[at + 1:at + 1 + len(varint)] = bytes([0x80] * (len(varint) - 1) + [smallest >> 7 * (len(varint) - 1)])
    path.write_bytes(bytes(data))
    claimed = pq.ParquetFile(path).metadata.row_group(0).total_byte_size
    assert claimed == smallest >> 1 and claimed * claimed_over <= size
    return claimed


def test_a_footer_that_claims_a_row_group_is_small_is_not_believed(tmp_path, parquet_batch_bytes):
    """200 documents of 300 KB (60 MB, a file of a few hundred KB) whose footer claims 1 MB: the readers sized
    their batches by it, and read all 200 at once; the pages' own headers say 60 MB, and the batches keep to
    the budget."""
    path = tmp_path / "crafted.parquet"
    texts = [f"document {i} " * 25_000 for i in range(200)]
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(200)], "text": texts}), path, compression="zstd",
                   use_dictionary=False)
    assert path.stat().st_size < 2 << 20
    _claiming_less(path, claimed_over=30)
    rows = list(parquet_rows(str(path), 1024, 4 << 20, 10_000_000))
    assert [row["text"] for row in rows] == texts  # every document, in order
    assert max(parquet_batch_bytes) <= (4 << 20) + len(texts[0]), parquet_batch_bytes


def test_one_row_that_its_footer_calls_small_is_still_one_huge_row(tmp_path):
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"id": ["d0"], "text": ["word " * 5_000_000]}), path, compression="zstd")  # 25 MB
    _claiming_less(path, claimed_over=10)
    (record,) = read(path)
    assert record.error.startswith("record over 10000000 bytes (its row group holds 250000")


def _header(*fields: bytes) -> bytes:
    return b"".join(fields) + b"\x00"


# a data page: type 0, 64 bytes decompressed, 32 compressed, and its own header (field 5) of 10 values
GOOD = _header(b"\x15\x00", b"\x15\x80\x01", b"\x15\x40", b"\x2c\x15\x14\x00")
SIZES = GOOD[:-1]  # ... and the fields after them, then the end
# each of these a page header no writer makes, and each an error that names it, read in bounded time
DAMAGED = {
    "garbage": b"\xff" * 64,
    "no sizes": _header(b"\x15\x00"),
    "cut short": GOOD[:4],
    "negative size": _header(b"\x15\x00", b"\x15\x03", b"\x15\x40"),
    "a list of a trillion booleans": SIZES + b"\x19\xf1\x80\x80\x80\x80\x80\x20\x00",
    "structs nested 100,000 deep": SIZES + b"\x1c" * 100_000,
    "lists nested 100,000 deep": SIZES + b"\x19\xf9" * 50_000,
    "a header of 2 MB": SIZES + b"\x18\x80\x80\x80\x01" + b"x" * (2 << 20) + b"\x00",
    "an unknown type": _header(b"\x15\x00", b"\x1d"),
    "a number of 80 bits": _header(b"\x15\x00", b"\x15" + b"\xff" * 10 + b"\x01"),
    # each of these Thrift's own reader (pyarrow's) reads as another size than the field's bytes say: the
    # number cut to 32 bits, the id wrapped to 16 bits (65,538 is field 2), a field of another type passed
    # over, the last of two copies kept
    "a size over 32 bits": _header(b"\x15\x00", b"\x15\x80\x01", b"\x15\x9c\x80\x80\x80\x10"),
    "a field's id over 16 bits": SIZES + b"\x05\x84\x80\x08\x80\x80\x80\x40\x00",
    "a size twice": SIZES + b"\x05\x04\x80\x80\x80\x40\x00",
    "a size of another type": _header(b"\x15\x00", b"\x16\x80\x01", b"\x15\x40", b"\x2c\x15\x14\x00"),
    "a data page without its number of values": _header(b"\x15\x00", b"\x15\x80\x01", b"\x15\x40"),
    "a negative number of values": _header(b"\x15\x00", b"\x15\x80\x01", b"\x15\x40", b"\x2c\x15\x13\x00"),
}


def test_a_page_header_is_read_with_its_length():
    assert _page_header(io.BytesIO(GOOD + b"page"), 0, len(GOOD) + 4) == PageHeader(0, 64, 32, 10, len(GOOD))
    dictionary = struct([(1, I32, 2), (2, I32, 64), (3, I32, 32), (7, 12, [(1, I32, 10), (2, I32, 0)])])
    assert _page_header(io.BytesIO(dictionary), 0, len(dictionary)) == PageHeader(2, 64, 32, 0, len(dictionary))


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_page_header_is_a_clear_error(damage):
    data = DAMAGED[damage]
    with pytest.raises(PageHeaderError):
        _page_header(io.BytesIO(data), 0, len(data))


def test_a_file_whose_page_header_is_damaged_is_a_file_error_not_a_crash(tmp_path):
    path = tmp_path / "damaged.parquet"
    pq.write_table(_table(100), path, compression="zstd")
    data = bytearray(path.read_bytes())
    first = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data[first.dictionary_page_offset:first.dictionary_page_offset + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))
    (error,) = read(path)
    assert error.error.startswith("parquet: the page header at 4")


def _crafted(path, *args, **kwargs):
    path.write_bytes(parquet_file(*args, **kwargs))
    return path


MEGABYTE_VALUES = [b"a" * (1 << 20)] * 40  # 40 MB, a few KB in zstd


def test_a_footer_that_claims_more_rows_than_the_pages_hold_is_a_file_error(tmp_path):
    """40 rows of 1 MB whose footer says 100,000 rows: each row looked 400 bytes, and pyarrow read all 40 in
    one batch of 40 MB; the pages' values say how many rows there can be."""
    page, decoded = data_page(MEGABYTE_VALUES)
    path = _crafted(tmp_path / "rows.parquet", [([page], 40)], rows=100_000, total_byte_size=decoded)
    (error,) = read(path)
    assert error.error == ("parquet: a column chunk at 4 of 40 values in a row group the footer says holds "
                           "100000 rows (a row holds a value of each column at least)")


def test_pages_short_of_the_values_their_footer_says_are_a_file_error(tmp_path):
    """A chunk's length that covers its first page alone: pyarrow reads on past it for the values the footer
    says (an old parquet-mr's files have it read 100 bytes more), where the second page was never measured."""
    first, _ = data_page([b"x"])
    second, _ = data_page(MEGABYTE_VALUES[:2])
    path = _crafted(tmp_path / "short.parquet", [([first, second], 3)], rows=3, chunk_length=len(first))
    (error,) = read(path)
    assert error.error == "parquet: a column chunk at 4 whose pages hold 1 values, where the footer says 3"


def test_column_chunks_over_the_same_bytes_are_a_file_error(tmp_path):
    """200 columns whose footer puts each over the same 70 KB of 10,000 empty pages: their headers were read
    200 times over (the square of the file); chunks may not overlap."""
    empty = struct([(1, I32, 1), (2, I32, 0), (3, I32, 0)])  # an index page of nothing: 7 bytes
    page, _ = data_page([b"x"])
    region = empty * 10_000 + page
    columns = [([region], 1)] + [([], 1)] * 199
    path = _crafted(tmp_path / "overlap.parquet", columns, rows=1, chunk_start=4, chunk_length=len(region))
    (error,) = read(path)
    assert error.error == "parquet: two column chunks overlap at 4"


def test_a_column_chunk_past_the_end_of_the_file_is_a_file_error(tmp_path):
    page, _ = data_page([b"x"])
    path = _crafted(tmp_path / "past.parquet", [([page], 1)], rows=1, chunk_length=1 << 40)
    (error,) = read(path)
    assert error.error.startswith(f"parquet: a column chunk at 4 of {1 << 40} bytes, in a file of ")


def test_rows_of_a_row_group_over_twice_the_limit_on_average_are_not_read(tmp_path):
    """Two rows of 25 MB: only a row group of one such row was passed over, and two were read whole."""
    path = tmp_path / "two.parquet"
    pq.write_table(pa.table({"id": ["d0", "d1"], "text": ["word " * 5_000_000, "more " * 5_000_000]}), path,
                   compression="zstd")
    first, second = read(path)  # a record each: the run's counts, and the rows after them, stay as they were
    assert first.error == second.error
    assert first.error.startswith("record over 10000000 bytes (its row group holds 5000")
    assert first.error.endswith(" in 2 rows)") and (first.line, second.line) == (1, 2)


def test_a_dictionary_in_a_column_of_lists_counts_once_per_value_a_row_holds(tmp_path, parquet_batch_bytes):
    """200 rows, each a list of 50 copies of one 16 KB string, from a file of about a KB that pyarrow writes:
    a dictionary entry was counted once a row, and the batches were 164 MB against a 4 MB budget."""
    path = tmp_path / "lists.parquet"
    tags = ["t" * (16 << 10)] * 50
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(200)], "tags": [tags] * 200}), path, compression="zstd")
    assert path.stat().st_size < 16 << 10
    rows = list(parquet_rows(str(path), 1024, 4 << 20, 10_000_000))
    assert len(rows) == 200 and all(row["tags"] == tags for row in rows)
    assert max(parquet_batch_bytes) <= (4 << 20) + 50 * (16 << 10), parquet_batch_bytes


def test_the_column_a_shard_is_chosen_by_is_read_as_its_dictionary(tmp_path, parquet_batch_bytes):
    """A bucket column of one 512 KB string over 200 rows, written by pyarrow in a file of about a KB: the
    shards job's `where` read it decoded, one batch of 105 MB against a 4 MB budget."""
    path = tmp_path / "bucket.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(200)], "text": ["text"] * 200,
                             "bucket": ["b" * (512 << 10)] * 199 + ["x"]}), path, compression="zstd")
    config = ReaderConfig(parquet_batch_bytes=4 << 20)
    batches = list(parquet_documents([(str(path), None)], where=("bucket", "x"), config=config))
    assert [row["id"] for batch in batches for row in batch.to_pylist()] == ["d199"]
    assert max(parquet_batch_bytes) < 4 << 20, parquet_batch_bytes


def test_a_dictionary_column_is_compared_by_its_entries_without_decoding_its_rows():
    values = pa.array(["a", None, "b" * 100, "a", "c"]).dictionary_encode()
    assert _matching(values, "a").to_pylist() == pa.compute.equal(values.cast(pa.string()), "a").to_pylist()
    assert _matching(pa.array([1, 2, 1]), 1).to_pylist() == [True, False, True]
    # what pyarrow allocates at most, in a process of its own: its own comparison decodes all 200 rows
    script = ("import pyarrow as pa; from spark_stages.ingest import _matching; "
              "values = pa.DictionaryArray.from_arrays(pa.array([0] * 200, pa.int32()), pa.array(['b' * (512 << 10)]));"
              "_matching(values, 'x'); print(pa.default_memory_pool().max_memory())")
    peak = int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert peak < 8 << 20, peak


def test_a_file_of_other_columns_than_id_and_text_is_read_with_its_first_column_not_as_a_dictionary(tmp_path):
    # a later file of an input whose first file has the columns (Spark reads the first's schema): its first
    # column, a struct here, was asked for as a dictionary, and pyarrow raised a bare KeyError in the task
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"meta": [{"s": "a"}, {"s": "b"}], "bucket": ["x", "y"]}), path)
    batches = list(parquet_documents([(str(path), None)], where=("bucket", "y")))
    assert [row for batch in batches for row in batch.to_pylist()] == [{"id": None, "text": None}]
