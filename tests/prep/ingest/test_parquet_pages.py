"""prep/ingest/parquet_pages.py: what a row group's pages decode to, by their own headers; a footer that claims
less is not believed, and a header that cannot be read is a clear error, whatever its bytes."""

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.ingest.inputs import InputFile
from prep.ingest.parquet_pages import PageHeaderError, _page_header, row_group_pages
from prep.ingest.readers import ReaderConfig, parquet_rows, read_file


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


GOOD = _header(b"\x15\x00", b"\x15\x80\x01", b"\x15\x40")  # type 0, 64 bytes decompressed, 32 compressed
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
}


def test_a_page_header_is_read_with_its_length():
    assert _page_header(io.BytesIO(GOOD + b"page"), 0, len(GOOD) + 4) == (0, 64, 32, len(GOOD))


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
