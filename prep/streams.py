"""Decompressing byte streams and a line splitter with a size limit.

Everything is read in chunks, so neither a compressed file nor one enormous line is ever held whole
in memory. Damage (a truncated or corrupt stream) is raised as StreamDamaged after every complete
line before it has been handed out.
"""

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import zstandard

CHUNK_BYTES = 1 << 20
RAW_KEEP_BYTES = 1 << 20  # how much of an over-limit line is kept for the quarantine


class StreamDamaged(Exception):
    """The file ends early or its compressed data is corrupt."""


def _plain_chunks(raw: BinaryIO) -> Iterator[bytes]:
    while chunk := raw.read(CHUNK_BYTES):
        yield chunk


def _gzip_chunks(raw: BinaryIO) -> Iterator[bytes]:
    stream = gzip.GzipFile(fileobj=raw)
    try:
        while chunk := stream.read(CHUNK_BYTES):
            yield chunk
    except (EOFError, OSError, zlib.error) as e:  # EOFError: truncated; BadGzipFile is an OSError
        raise StreamDamaged(f"gzip: {e}") from e


def _zstd_chunks(raw: BinaryIO) -> Iterator[bytes]:
    # zstandard's stream_reader returns a short read, without error, on a truncated frame, so frames
    # are followed by hand: a frame still open when the input ends means the file was cut.
    dctx = zstandard.ZstdDecompressor()
    frame, frame_open = dctx.decompressobj(), False
    try:
        while chunk := raw.read(CHUNK_BYTES):
            while chunk:
                frame_open = True
                out = frame.decompress(chunk)
                if out:
                    yield out
                if frame.eof:
                    chunk, frame, frame_open = frame.unused_data, dctx.decompressobj(), False
                else:
                    chunk = b""
    except zstandard.ZstdError as e:
        raise StreamDamaged(f"zstd: {e}") from e
    if frame_open:
        raise StreamDamaged("zstd: file ends inside a frame (truncated)")


def decompressed_chunks(path: str) -> Iterator[bytes]:
    """The file's bytes, decompressed by suffix, in chunks."""
    with open(path, "rb") as raw:
        if path.endswith(".gz"):
            yield from _gzip_chunks(raw)
        elif path.endswith(".zst"):
            yield from _zstd_chunks(raw)
        else:
            yield from _plain_chunks(raw)


@dataclass
class Line:
    number: int  # 1-based
    data: bytes  # without the line ending; only the first RAW_KEEP_BYTES when too_long
    too_long: bool


def split_lines(chunks: Iterator[bytes], max_bytes: int) -> Iterator[Line]:
    """Lines of a chunked stream; a line over max_bytes is reported too_long, not accumulated."""
    pieces: list[bytes] = []  # the current line so far
    size, number = 0, 0
    kept_of_long_line: bytes | None = None  # set once the current line is over the limit

    def finish() -> Line:
        nonlocal pieces, size, kept_of_long_line
        if kept_of_long_line is not None:
            line = Line(number, kept_of_long_line, True)
        else:
            line = Line(number, b"".join(pieces), False)
        pieces, size, kept_of_long_line = [], 0, None
        return line

    for chunk in chunks:
        pos = 0
        while pos < len(chunk):
            end = chunk.find(b"\n", pos)
            piece = chunk[pos:] if end == -1 else chunk[pos:end]
            if kept_of_long_line is None:
                pieces.append(piece)
                size += len(piece)
                if size > max_bytes:
                    kept_of_long_line, pieces = b"".join(pieces)[:RAW_KEEP_BYTES], []
            if end == -1:
                break
            number += 1
            yield finish()
            pos = end + 1
    if size or kept_of_long_line is not None:
        number += 1
        yield finish()
