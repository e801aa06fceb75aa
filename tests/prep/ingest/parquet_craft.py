"""Parquet files as no writer makes them, for the tests of prep/ingest/parquet_pages.py: a file is its pages
and a footer written here in Thrift's compact protocol, so that a footer can claim what its pages do not hold
(more rows, fewer bytes, two columns over the same bytes). One row group; columns of plain strings."""

import pyarrow as pa

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
CODECS = {"none": 0, "zstd": 6}


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def zigzag(n: int) -> int:
    return n << 1 if n >= 0 else (-n << 1) - 1


def value(kind: int, v) -> bytes:
    if kind in (I16, I32, I64):
        return varint(zigzag(v))
    if kind == BINARY:
        v = v.encode() if isinstance(v, str) else v
        return varint(len(v)) + v
    if kind == STRUCT:
        return struct(v)
    if kind == LIST:
        element, items = v
        head = bytes([len(items) << 4 | element]) if len(items) < 15 else bytes([0xF0 | element]) + varint(len(items))
        return head + b"".join(value(element, item) for item in items)
    raise ValueError(kind)


def struct(fields: list[tuple[int, int, object]]) -> bytes:
    """(field id, type, value) in order, each id after the last (a delta of 1-15, else written out)."""
    out, last = bytearray(), 0
    for field, kind, v in fields:
        out += bytes([(field - last) << 4 | kind]) if 0 < field - last <= 15 else bytes([kind]) + varint(zigzag(field))
        last = field
        out += value(kind, v)
    return bytes(out + b"\x00")


def data_page(values: list[bytes], codec: str = "zstd") -> tuple[bytes, int]:
    """(a data page of plain strings, its header first; the bytes it decodes to)."""
    raw = b"".join(len(v).to_bytes(4, "little") + v for v in values)
    body = raw if codec == "none" else pa.compress(raw, codec=codec, asbytes=True)
    header = struct([(1, I32, 0), (2, I32, len(raw)), (3, I32, len(body)),
                     (5, STRUCT, [(1, I32, len(values)), (2, I32, 0), (3, I32, 3), (4, I32, 3)])])
    return header + body, len(raw)


def parquet_file(columns: list[tuple[list[bytes], int]], rows: int, total_byte_size: int = 1, codec: str = "zstd",
                 chunk_start: int | None = None, chunk_length: int | None = None) -> bytes:
    """A file of one row group of `rows` rows: each column its pages and the values its footer says it holds;
    where given, the footer says every column's chunk starts at `chunk_start` and is `chunk_length` long."""
    out, chunks, schema = bytearray(b"PAR1"), [], [[(4, BINARY, "schema"), (5, I32, len(columns))]]
    for i, (pages, values) in enumerate(columns):
        start = len(out)
        out += b"".join(pages)
        start, length = start if chunk_start is None else chunk_start, len(out) - start
        length = length if chunk_length is None else chunk_length
        name = f"c{i}"
        schema.append([(1, I32, 6), (3, I32, 0), (4, BINARY, name), (6, I32, 0)])  # a required UTF-8 string
        chunks.append([(2, I64, start), (3, STRUCT, [
            (1, I32, 6), (2, LIST, (I32, [0, 3])), (3, LIST, (BINARY, [name])), (4, I32, CODECS[codec]),
            (5, I64, values), (6, I64, length), (7, I64, length), (9, I64, start)])])
    group = [(1, LIST, (STRUCT, chunks)), (2, I64, total_byte_size), (3, I64, rows)]
    footer = struct([(1, I32, 1), (2, LIST, (STRUCT, schema)), (3, I64, rows), (4, LIST, (STRUCT, [group]))])
    return bytes(out + footer + len(footer).to_bytes(4, "little") + b"PAR1")
