"""What a Parquet row group's pages decode to, as their own headers say, read from the file.

A Parquet file's footer sums up each row group (its rows, its bytes decoded), and the readers size their batches
by it; but a footer is a claim like any other part of a file from elsewhere: a crafted one can say a row group of
gigabytes (a repeated string, which zstd packs into kilobytes) holds a kilobyte. What pyarrow allocates is what
each page's header says it decompresses to (it fails where the page decompresses to anything else): those
headers, read here, bound what reading the row group costs whatever its footer says. A page header is a Thrift
struct in its compact protocol (parquet-format's PageHeader: 1 type, 2 uncompressed_page_size, 3
compressed_page_size, then the kind's own header, whose field 1 is a data page's number of values); the fields
that are not needed are passed over, each bounded by the bytes it is read from.

The fields that are read are read as no writer would write them otherwise, stricter than Thrift's own reader:
where Thrift cuts a number to 32 bits, wraps a field's id to 16, passes over a field of another type or keeps
the last of two copies, a crafted header can say one size to this reader and another to pyarrow's, so each of
those is an error here. And the pages must add up to what the footer says the row group holds: a column's
chunks may not overlap or run past the file (a scan of one range many times over would cost the square of the
file), its data pages hold its values, no fewer (pyarrow would read on past the chunk, where nothing was
measured), and every column holds at least the row group's rows (a footer that claims more rows than the pages
hold would make each row look small).
"""

import os
from dataclasses import dataclass

# Thrift compact protocol's types
STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3  # parquet-format's PageType
# PageHeader's fields read: 1-3 as above, and field 1 (num_values) of a data page's header (5, and 8 for v2)
HEADER_FIELDS = {1: None, 2: None, 3: None, 5: {1: None}, 8: {1: None}}
DATA_HEADERS = {DATA_PAGE: 5, DATA_PAGE_V2: 8}
I32_RANGE = range(-(1 << 31), 1 << 31)
FIELD_IDS = range(-(1 << 15), 1 << 15)
FIRST_READ = 256  # bytes read for a page header first (a header is tens of bytes, more with statistics) ...
MAX_HEADER_BYTES = 1 << 20  # ... up to this: a page's statistics hold at most its min and max values
MAX_NESTING = 16  # structs and lists within a header (parquet-format's go three deep)


class PageHeaderError(ValueError):
    """A page header that cannot be read: the row group it is in is damaged."""


@dataclass(frozen=True)
class Pages:
    decoded: int = 0  # the bytes all the pages decompress to
    # ... the dictionary pages of strings, each times the values of its column a row holds (on average: a row
    # may hold any of their entries for each of its values, one for a column that is not a list)
    dictionaries: int = 0


@dataclass(frozen=True)
class PageHeader:
    kind: int
    decoded: int  # uncompressed_page_size
    compressed: int  # compressed_page_size
    values: int  # a data page's values (nulls included), 0 for other pages
    length: int  # the header's own bytes


def row_group_pages(path: str, meta) -> Pages:
    """The pages of a row group (its footer's metadata: where each column chunk is and how long), by their
    headers. Raises PageHeaderError for a header that cannot be read, and for pages that do not add up to
    what the footer says (see above)."""
    decoded = dictionaries = 0
    if meta.num_rows == 0:  # nothing is read (and an empty chunk has no data page: its offset is 0)
        return Pages()
    with open(path, "rb") as f:
        for column, start in _chunks(meta, os.fstat(f.fileno()).st_size):
            strings = column.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
            values = dictionary = 0
            for page in _chunk_pages(f, start, column.total_compressed_size):
                decoded += page.decoded
                values += page.values
                dictionary += page.decoded if page.kind == DICTIONARY_PAGE and strings else 0
            if values != column.num_values:
                raise PageHeaderError(f"a column chunk at {start} whose pages hold {values} values, where the footer "
                                      f"says {column.num_values}")
            if values < meta.num_rows:
                raise PageHeaderError(f"a column chunk at {start} of {values} values in a row group the footer says "
                                      f"holds {meta.num_rows} rows (a row holds a value of each column at least)")
            dictionaries += dictionary * -(-values // meta.num_rows)
    return Pages(decoded, dictionaries)


def _chunks(meta, file_size: int) -> list:
    """(column chunk's metadata, where its first page starts) of each column, in order; PageHeaderError where
    two overlap or one runs past the file."""
    chunks = []
    for i in range(meta.num_columns):
        column = meta.column(i)
        start = column.data_page_offset
        if column.has_dictionary_page and 0 < (column.dictionary_page_offset or 0) < start:
            start = column.dictionary_page_offset  # a chunk's dictionary comes before its data pages
        if start < 0 or column.total_compressed_size < 0 or start + column.total_compressed_size > file_size:
            raise PageHeaderError(f"a column chunk at {start} of {column.total_compressed_size} bytes, in a file of "
                                  f"{file_size}")
        chunks.append((column, start))
    ranges = sorted((start, start + column.total_compressed_size) for column, start in chunks)
    for (_, end), (start, _) in zip(ranges, ranges[1:]):
        if start < end:
            raise PageHeaderError(f"two column chunks overlap at {start}")
    return chunks


def _chunk_pages(f, start: int, length: int):
    """The PageHeader of each page of a column chunk of `length` bytes from `start`."""
    at, end = start, start + length
    while at < end:
        page = _page_header(f, at, end - at)
        yield page
        at += page.length + page.compressed


def _page_header(f, at: int, room: int) -> PageHeader:
    """The header at `at`, of at most `room` bytes."""
    size = FIRST_READ
    while True:
        f.seek(at)
        data = f.read(min(size, room))
        try:
            fields = _Compact(data).struct_fields(HEADER_FIELDS)
            break
        except EOFError:
            if size >= min(MAX_HEADER_BYTES, room):
                raise PageHeaderError(f"the page header at {at} runs past {len(data)} bytes") from None
            size *= 64
        except (PageHeaderError, RecursionError) as e:
            raise PageHeaderError(f"the page header at {at}: {e}") from None
    if not {1, 2, 3} <= set(fields):
        raise PageHeaderError(f"the page header at {at} lacks its type or sizes")
    kind, values = fields[1], 0
    if kind in DATA_HEADERS:
        values = fields.get(DATA_HEADERS[kind], {}).get(1, -1)
        if values < 0:
            raise PageHeaderError(f"the data page header at {at} lacks its number of values, or it is negative")
    if fields[2] < 0 or fields[3] < 0:
        raise PageHeaderError(f"the page header at {at}: {fields[3]} bytes, {fields[2]} decompressed")
    return PageHeader(kind, fields[2], fields[3], values, fields["end"])


class _Compact:
    """A reader of Thrift's compact protocol over bytes; EOFError where the bytes end first."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise EOFError
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise PageHeaderError("a number of more than 64 bits")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def advance(self, count: int) -> None:
        if count < 0:
            raise PageHeaderError("a negative length")
        if self.at + count > len(self.data):
            raise EOFError
        self.at += count

    def struct_fields(self, wanted: dict, depth: int = 0) -> dict:
        """The fields `wanted` of the struct here (a field's id to None for a 32-bit number, or to the fields
        wanted of a struct), the others passed over; and "end": where it ends. A wanted field of another type,
        twice, or over 32 bits is an error, and so is a field's id over 16 bits (see above)."""
        if depth > MAX_NESTING:
            raise PageHeaderError("structs nested too deep")
        found, field = {}, 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == STOP:
                found["end"] = self.at
                return found
            field = field + (head >> 4) if head >> 4 else self.zigzag()
            if field not in FIELD_IDS:
                raise PageHeaderError(f"a field's id {field} over 16 bits")
            if field not in wanted:
                self.skip(kind, depth)
                continue
            if field in found:
                raise PageHeaderError(f"field {field} twice")
            if kind != (I32 if wanted[field] is None else STRUCT):
                raise PageHeaderError(f"field {field} of type {kind}")
            found[field] = self.zigzag() if wanted[field] is None else self.struct_fields(wanted[field], depth + 1)
            if wanted[field] is None and found[field] not in I32_RANGE:
                raise PageHeaderError(f"field {field}: {found[field]}, over 32 bits")

    def skip(self, kind: int, depth: int, in_collection: bool = False) -> None:
        """Passes over a value of `kind` (a boolean is its field header's type in a struct, a byte in a list)."""
        if kind in (TRUE, FALSE):
            if in_collection:
                self.byte()
        elif kind == BYTE:
            self.byte()
        elif kind in (I16, I32, I64):
            self.varint()
        elif kind == DOUBLE:
            self.advance(8)
        elif kind == BINARY:
            self.advance(self.varint())
        elif depth > MAX_NESTING:
            raise PageHeaderError("values nested too deep")
        elif kind in (LIST, SET):
            head = self.byte()
            count = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(count):  # each element takes a byte or more: as many as the bytes allow
                self.skip(head & 0x0F, depth + 1, in_collection=True)
        elif kind == MAP:
            count = self.varint()
            types = self.byte() if count else 0
            for _ in range(count):
                self.skip(types >> 4, depth + 1, in_collection=True)
                self.skip(types & 0x0F, depth + 1, in_collection=True)
        elif kind == STRUCT:
            self.struct_fields({}, depth + 1)
        else:
            raise PageHeaderError(f"a field of unknown type {kind}")
