"""Where a shard file's token buffers lie, read from its Arrow IPC metadata, so that L3 can decompress
them straight into L2 (pyarrow would decompress into memory of its own, then L2 copies it: the copy
and the page faults on pyarrow's fresh memory cost about as much as the decompression itself).

Only the layout the shards job writes is described: two list columns of 4-byte values, no nulls,
every buffer zstd-compressed (or stored uncompressed), offsets from 0 over the values written. For
anything else `shard_layout` returns None and the caller reads the file with pyarrow.

The metadata are FlatBuffers (Arrow's File.fbs, Message.fbs, Schema.fbs); the few fields read here
are read by hand: a dependency for four tables is not worth it, and every offset is bounds-checked.
"""

import struct
from typing import NamedTuple

import zstandard

MAGIC = b"ARROW1"
CONTINUATION = 0xFFFFFFFF
RECORD_BATCH = 3  # MessageHeader.RecordBatch
ZSTD = 1  # CompressionType.ZSTD (LZ4_FRAME = 0 is the default when absent)
UNCOMPRESSED = -1  # a compressed buffer's length prefix when its bytes are stored as they are
COLUMNS = 2  # tokens, cu_seqlens: a list node and a values node each
BUFFERS_PER_LIST = 4  # list validity, offsets, values validity, values data


class Region(NamedTuple):
    """A buffer in the file: `length` bytes at `offset` (after the int64 length prefix Arrow puts before
    each compressed buffer), a zstd frame of `size` bytes, or those bytes as they are."""
    offset: int
    length: int
    compressed: bool
    size: int


class ListColumn(NamedTuple):
    """One list column of one record batch: `rows` lists over `values` 4-byte values."""
    rows: int
    values: int
    offsets: Region  # int32[rows + 1]
    data: Region  # values * 4 bytes


class RecordBatchLayout(NamedTuple):
    rows: int
    tokens: ListColumn
    cu_seqlens: ListColumn


class _FlatBuffer:
    """Reads tables, scalars and vectors of struct out of one FlatBuffer, checking every offset."""

    def __init__(self, data: memoryview, start: int, end: int):
        self.data, self.start, self.end = data, start, end

    def _check(self, at: int, size: int) -> int:
        if not (self.start <= at and at + size <= self.end):
            raise ValueError(f"offset {at} outside the metadata [{self.start}, {self.end})")
        return at

    def _unpack(self, fmt: str, at: int):
        return struct.unpack_from(fmt, self.data, self._check(at, struct.calcsize(fmt)))[0]

    def root(self) -> int:
        return self.start + self._unpack("<I", self.start)

    def _field(self, table: int, index: int) -> int | None:
        vtable = table - self._unpack("<i", table)
        vtable_size = self._unpack("<H", vtable)
        if 4 + 2 * index >= vtable_size:
            return None
        offset = self._unpack("<H", vtable + 4 + 2 * index)
        return table + offset if offset else None

    def scalar(self, table: int, index: int, fmt: str, default: int) -> int:
        at = self._field(table, index)
        return default if at is None else self._unpack(fmt, at)

    def table(self, table: int, index: int) -> int | None:
        at = self._field(table, index)
        return None if at is None else at + self._unpack("<I", at)

    def structs(self, table: int, index: int, fmt: str) -> list[tuple]:
        """A vector of structs (little-endian `fmt` each)."""
        vector = self.table(table, index)
        if vector is None:
            return []
        count, size = self._unpack("<I", vector), struct.calcsize(fmt)
        self._check(vector + 4, count * size)
        return [struct.unpack_from(fmt, self.data, vector + 4 + i * size) for i in range(count)]


def shard_layout(data: memoryview) -> list[RecordBatchLayout] | None:
    """The record batches of a shard file's bytes, or None when the file is laid out otherwise than
    the fast path reads (the caller then reads it with pyarrow, which checks it in full). Raises
    ValueError for a file that is not an Arrow IPC file at all."""
    size = len(data)
    if size < 2 * len(MAGIC) + 4 or bytes(data[:len(MAGIC)]) != MAGIC or bytes(data[-len(MAGIC):]) != MAGIC:
        raise ValueError("no Arrow IPC file magic at its start and end")
    footer_length = struct.unpack_from("<i", data, size - len(MAGIC) - 4)[0]
    footer_start = size - len(MAGIC) - 4 - footer_length
    if footer_length <= 0 or footer_start < len(MAGIC):
        raise ValueError(f"footer length {footer_length} does not fit the file")
    footer = _FlatBuffer(data, footer_start, footer_start + footer_length)
    # Footer: version, schema, dictionaries, recordBatches [Block {offset: long, metaDataLength: int, bodyLength: long}]
    root = footer.root()
    if footer.structs(root, 2, "<qi4xq"):
        return None
    layouts = []
    for offset, metadata_length, body_length in footer.structs(root, 3, "<qi4xq"):
        if not (0 < offset and offset + metadata_length + body_length <= footer_start):
            raise ValueError(f"a record batch at {offset} does not fit the file")
        layout = _record_batch(data, offset, metadata_length, body_length)
        if layout is None:
            return None
        layouts.append(layout)
    return layouts


def _record_batch(data: memoryview, offset: int, metadata_length: int, body_length: int) -> RecordBatchLayout | None:
    start = offset + 8 if struct.unpack_from("<I", data, offset)[0] == CONTINUATION else offset + 4
    message = _FlatBuffer(data, start, offset + metadata_length)
    # Message: version, header_type, header, bodyLength
    root = message.root()
    if message.scalar(root, 1, "<B", 0) != RECORD_BATCH or message.scalar(root, 3, "<q", 0) != body_length:
        return None
    batch = message.table(root, 2)
    if batch is None:
        return None
    # RecordBatch: length, nodes [FieldNode {length, null_count}], buffers [Buffer {offset, length}], compression
    rows = message.scalar(batch, 0, "<q", 0)
    nodes = message.structs(batch, 1, "<qq")
    buffers = message.structs(batch, 2, "<qq")
    compression = message.table(batch, 3)
    if compression is not None and (message.scalar(compression, 0, "<b", 0) != ZSTD
                                    or message.scalar(compression, 1, "<b", 0) != 0):
        return None
    if (compression is None or len(nodes) != 2 * COLUMNS or len(buffers) != BUFFERS_PER_LIST * COLUMNS
            or any(nulls for _, nulls in nodes)):
        return None
    body = offset + metadata_length
    columns = []
    for column in range(COLUMNS):
        (lists, _), (values, _) = nodes[2 * column:2 * column + 2]
        _, offsets, _, values_data = buffers[BUFFERS_PER_LIST * column:BUFFERS_PER_LIST * (column + 1)]
        # a count below 0 would size an array from the file's end, or balance one too large in the totals
        if (lists != rows or rows < 0 or values < 0
                or any(at < 0 or at + length > body_length for at, length in (offsets, values_data))):
            return None
        regions = [_region(data, body + at, length, size)
                   for (at, length), size in ((offsets, 4 * (rows + 1)), (values_data, 4 * values))]
        if None in regions:
            return None
        columns.append(ListColumn(lists, values, *regions))
    return RecordBatchLayout(rows, *columns)


def _region(data: memoryview, offset: int, length: int, size: int) -> Region | None:
    """The buffer at `offset` if it holds exactly `size` bytes (Arrow allows longer buffers: those go
    the pyarrow way), else None."""
    if length < 8:
        return None
    prefix = struct.unpack_from("<q", data, offset)[0]
    if prefix == UNCOMPRESSED:
        return Region(offset + 8, length - 8, False, size) if length - 8 == size else None
    return Region(offset + 8, length - 8, True, size) if prefix == size else None


def read_region(data: memoryview, region: Region, out: memoryview) -> None:
    """Decompresses (or copies) the buffer into `out` (`region.size` bytes). zstd releases the GIL."""
    source = data[region.offset:region.offset + region.length]
    if not region.compressed:
        out[:] = source
        return
    # A decompressor per call: they are not thread-safe, and cost microseconds to make.
    reader, done = zstandard.ZstdDecompressor().stream_reader(source), 0
    try:
        while done < region.size:
            read = reader.readinto(out[done:])
            if not read:
                raise ValueError(f"the zstd frame at {region.offset} ends after {done} of {region.size} bytes")
            done += read
        if reader.read(1):
            raise ValueError(f"the zstd frame at {region.offset} holds more than its {region.size} bytes")
    except zstandard.ZstdError as e:
        raise ValueError(f"the zstd frame at {region.offset} does not decode: {e}") from None
