"""What a Parquet row group's pages decode to, as their own headers say, read from the file.

A Parquet file's footer sums up each row group (its rows, its bytes decoded), and the readers size their batches
by it; but a footer is a claim like any other part of a file from elsewhere: a crafted one can say a row group of
gigabytes (a repeated string, which zstd packs into kilobytes) holds a kilobyte. What pyarrow allocates is what
each page's header says it decompresses to (it fails where the page decompresses to anything else): those
headers, read here, bound what reading the row group costs whatever its footer says. A page header is a Thrift
struct in its compact protocol (parquet-format's PageHeader: 1 type, 2 uncompressed_page_size, 3
compressed_page_size, then the kind's own header); the fields that are not needed are passed over, each bounded
by the bytes it is read from.
"""

from dataclasses import dataclass

# Thrift compact protocol's types
STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
DICTIONARY_PAGE = 2  # parquet-format's PageType
FIRST_READ = 256  # bytes read for a page header first (a header is tens of bytes, more with statistics) ...
MAX_HEADER_BYTES = 1 << 20  # ... up to this: a page's statistics hold at most its min and max values
MAX_NESTING = 16  # structs and lists within a header (parquet-format's go three deep)


class PageHeaderError(ValueError):
    """A page header that cannot be read: the row group it is in is damaged."""


@dataclass(frozen=True)
class Pages:
    decoded: int = 0  # the bytes all the pages decompress to
    dictionaries: int = 0  # ... the dictionary pages of strings (a row may hold any of their entries)


def row_group_pages(path: str, meta) -> Pages:
    """The pages of a row group (its footer's metadata: where each column chunk is and how long), by their
    headers. Raises PageHeaderError for a header that cannot be read."""
    decoded = dictionaries = 0
    if meta.num_rows == 0:  # nothing is read (and an empty chunk has no data page: its offset is 0)
        return Pages()
    with open(path, "rb") as f:
        for i in range(meta.num_columns):
            column = meta.column(i)
            strings = column.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
            start = column.data_page_offset
            if column.has_dictionary_page and 0 < (column.dictionary_page_offset or 0) < start:
                start = column.dictionary_page_offset  # a chunk's dictionary comes before its data pages
            for kind, size in _chunk_pages(f, start, column.total_compressed_size):
                decoded += size
                dictionaries += size if kind == DICTIONARY_PAGE and strings else 0
    return Pages(decoded, dictionaries)


def _chunk_pages(f, start: int, length: int):
    """(page type, bytes decompressed) of each page of a column chunk of `length` bytes from `start`."""
    if start < 0 or length < 0:
        raise PageHeaderError(f"a column chunk at {start} of {length} bytes")
    at, end = start, start + length
    while at < end:
        kind, decompressed, compressed, header = _page_header(f, at, end - at)
        yield kind, decompressed
        at += header + compressed


def _page_header(f, at: int, room: int) -> tuple[int, int, int, int]:
    """(type, uncompressed_page_size, compressed_page_size, the header's length) of the header at `at`."""
    size = FIRST_READ
    while True:
        f.seek(at)
        data = f.read(min(size, room))
        try:
            fields = _Compact(data).struct_fields({1, 2, 3})
            break
        except EOFError:
            if size >= min(MAX_HEADER_BYTES, room):
                raise PageHeaderError(f"the page header at {at} runs past {len(data)} bytes") from None
            size *= 64
        except (PageHeaderError, RecursionError) as e:
            raise PageHeaderError(f"the page header at {at}: {e}") from None
    if set(fields) - {"end"} != {1, 2, 3}:
        raise PageHeaderError(f"the page header at {at} lacks its type or sizes")
    if fields[2] < 0 or fields[3] < 0:
        raise PageHeaderError(f"the page header at {at}: {fields[3]} bytes, {fields[2]} decompressed")
    return fields[1], fields[2], fields[3], fields["end"]


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

    def struct_fields(self, wanted: set[int], depth: int = 0) -> dict:
        """The integer fields `wanted` of the struct here (the others passed over), and "end": where it ends."""
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
            if field in wanted and kind in (I16, I32, I64):
                found[field] = self.zigzag()
            else:
                self.skip(kind, depth)

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
            self.struct_fields(set(), depth + 1)
        else:
            raise PageHeaderError(f"a field of unknown type {kind}")
