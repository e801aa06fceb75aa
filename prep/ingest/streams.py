"""Decompressing byte streams and a line splitter with a size limit.

Everything is read in chunks, so neither a compressed file nor one enormous line is ever held whole
in memory. Compressed files are read frame by frame (gzip members, zstd frames, zstd's skippable
frames), as `gzip -d` and `zstd -d` read them:
  - several frames are one stream;
  - bytes after a complete frame that do not start another one (padding, a half-appended
    download) are ignored with a warning: every record before them is complete;
  - damage inside a frame (corrupt data, a file cut short) is raised as StreamDamaged after every
    byte that could be decompressed before it has been handed out, whatever the chunk size, so
    every complete line before the damage is kept;
  - a file that decompresses to more than MAX_EXPANSION times its size, past EXPANSION_FLOOR, is a
    decompression bomb: StreamDamaged once that much is handed out (5 KB of zstd made 160 MB of
    blank lines, 1 MB would make 32 GB: hours of one task, or billions of quarantined `{}` lines).
"""

import os
import re
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import zstandard

CHUNK_BYTES = 1 << 20
RAW_KEEP_BYTES = 1 << 20  # how much of an over-limit line is kept for the quarantine
# zstd's decompressor returns all of a call's output at once, and a 4-byte block may stand for 128 KB:
# input is fed in slices of ZSTD_FEED_BYTES (at most 32 MiB out each), so that no piece handed out
# exceeds MAX_PIECE_BYTES however hostile the file.
ZSTD_FEED_BYTES = 1 << 10
MAX_PIECE_BYTES = CHUNK_BYTES + ZSTD_FEED_BYTES * (128 << 10) // 4
# Text compresses 3-10 times, a highly repetitive dump 100 times; 1,000 times past 64 MiB is no corpus.
MAX_EXPANSION, EXPANSION_FLOOR = 1000, 64 << 20
_NEWLINES = re.compile(rb"\n+")


class StreamDamaged(Exception):
    """The file ends early or its compressed data is corrupt."""


class _Gzip:
    name, frame, magic_bytes, errors = "gzip", "member", 2, (zlib.error,)

    @staticmethod
    def starts_frame(head: bytes) -> bool:
        return head[:2] == b"\x1f\x8b"

    @staticmethod
    def new():
        return zlib.decompressobj(16 + zlib.MAX_WBITS)  # 16+: a gzip header and trailer around the deflate data

    @staticmethod
    def feed(inflater, data: bytes, chunk_bytes: int) -> Iterator[bytes]:
        # Output bounded per call (a small chunk may inflate to gigabytes); a full output means zlib may
        # hold more, so it is asked again even when all input is taken.
        while not inflater.eof:
            out = inflater.decompress(data, chunk_bytes)
            yield out
            data = inflater.unconsumed_tail
            if not data and len(out) < chunk_bytes:
                return


class _SlicedZstd:
    """zstd's decompressobj, fed ZSTD_FEED_BYTES at a time (see MAX_PIECE_BYTES); `unused_data` is
    everything after the frame's end, as in the decompressobj."""

    def __init__(self):
        self._decompressor = zstandard.ZstdDecompressor().decompressobj()
        self.unused_data = b""

    @property
    def eof(self) -> bool:
        return self._decompressor.eof

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """The output of `data`, in pieces of at least CHUNK_BYTES but the last (not one per slice)."""
        pending, size = [], 0
        for start in range(0, len(data), ZSTD_FEED_BYTES):
            pending.append(self._decompressor.decompress(data[start:start + ZSTD_FEED_BYTES]))
            size += len(pending[-1])
            if self._decompressor.eof:
                self.unused_data = self._decompressor.unused_data + data[start + ZSTD_FEED_BYTES:]
                break
            if size >= CHUNK_BYTES:
                yield b"".join(pending)
                pending, size = [], 0
        yield b"".join(pending)


class _Zstd:
    name, frame, magic_bytes, errors = "zstd", "frame", 4, (zstandard.ZstdError,)

    @staticmethod
    def starts_frame(head: bytes) -> bool:
        skippable = head[0] & 0xF0 == 0x50 and head[1:4] == b"\x2a\x4d\x18"  # metadata the decoder passes over
        return head[:4] == b"\x28\xb5\x2f\xfd" or skippable

    @staticmethod
    def new():
        return _SlicedZstd()

    @staticmethod
    def feed(decompressor, data: bytes, _chunk_bytes: int) -> Iterator[bytes]:
        yield from decompressor.pieces(data)


FORMATS = {".gz": _Gzip, ".zst": _Zstd}


def _output_before_damage(raw: BinaryIO, fmt, frame_start: int, chunk_start: int, chunk: bytes, chunk_bytes: int,
                          handed_out: int) -> Generator[bytes, None, int]:
    """Yields what the chunk that failed decompresses to before the damage, past the `handed_out` bytes of it
    already handed out; returns the file offset of the damage.

    The frame is decompressed again up to that chunk, a chunk at a time and its output dropped (it was
    handed out already), then the chunk byte by byte, so nothing that precedes the damage is lost to the size
    of a read. Memory stays a piece of output, however far into the file the damage is and however much the
    chunk decodes to (a 16 KB chunk of zstd blocks that repeat one byte stands for 500 MB)."""
    decompressor = fmt.new()
    raw.seek(frame_start)
    for start in range(frame_start, chunk_start, chunk_bytes):
        for _ in fmt.feed(decompressor, raw.read(min(chunk_bytes, chunk_start - start)), chunk_bytes):
            pass
    skip = handed_out
    for i in range(len(chunk)):
        try:
            for piece in fmt.feed(decompressor, chunk[i:i + 1], chunk_bytes):
                if skip >= len(piece):
                    skip -= len(piece)
                    continue
                yield piece[skip:]
                skip = 0
        except fmt.errors:
            return chunk_start + i
    return chunk_start + len(chunk)


def _frames(raw: BinaryIO, fmt, warnings: list[str], chunk_bytes: int) -> Iterator[bytes]:
    decompressor, frames, frame_start = None, 0, 0
    offset, data = 0, raw.read(chunk_bytes)  # offset: where `data` starts in the file
    while data:
        if decompressor is None:  # between frames: does another one start here?
            while len(data) < fmt.magic_bytes and (more := raw.read(chunk_bytes)):
                data += more
            if not fmt.starts_frame(data + bytes(fmt.magic_bytes)):
                if frames == 0:
                    raise StreamDamaged(f"{fmt.name}: not a {fmt.name} file")
                left = os.fstat(raw.fileno()).st_size - offset
                warnings.append(f"{fmt.name}: {left} bytes after {fmt.frame} {frames} are not another "
                                f"{fmt.frame}: ignored")
                return
            decompressor, frames, frame_start = fmt.new(), frames + 1, offset
        handed_out = 0  # of this chunk's output
        try:
            for out in fmt.feed(decompressor, data, chunk_bytes):
                handed_out += len(out)
                yield out
        except fmt.errors as e:
            at = yield from _output_before_damage(raw, fmt, frame_start, offset, data, chunk_bytes, handed_out)
            raise StreamDamaged(f"{fmt.name}: {fmt.frame} {frames} is corrupt at byte {at}: {e}") from e
        if decompressor.eof:
            rest = decompressor.unused_data
            offset += len(data) - len(rest)
            decompressor, data = None, rest
            if not data:
                data = raw.read(chunk_bytes)
        else:
            offset, data = offset + len(data), raw.read(chunk_bytes)
    if decompressor is not None:
        raise StreamDamaged(f"{fmt.name}: file ends inside {fmt.frame} {frames} (truncated)")


def decompressed_chunks(path: str, warnings: list[str] | None = None,
                        chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The file's bytes, decompressed by suffix, in chunks; what was ignored is added to `warnings`."""
    fmt = FORMATS.get(os.path.splitext(path)[1])
    with open(path, "rb") as raw:
        if fmt is None:
            while chunk := raw.read(chunk_bytes):
                yield chunk
            return
        handed_out = 0
        for chunk in _frames(raw, fmt, [] if warnings is None else warnings, chunk_bytes):
            handed_out += len(chunk)
            if handed_out > max(EXPANSION_FLOOR, MAX_EXPANSION * raw.tell()):
                raise StreamDamaged(f"{fmt.name}: {handed_out} bytes decompressed from the first {raw.tell()} of the "
                                    f"file, over {MAX_EXPANSION} times as many: a decompression bomb, not read on")
            yield chunk


@dataclass
class Line:
    number: int  # 1-based
    data: bytes  # without the line ending; only the first RAW_KEEP_BYTES when too_long
    too_long: bool


def split_lines(chunks: Iterator[bytes], max_bytes: int) -> Iterator[Line]:
    """Lines of a chunked stream; a line over max_bytes is reported too_long, not accumulated. Empty lines are
    counted, not yielded (no reader makes a record of one): a run of them is passed over at once, not a
    Python step each (800 s a GB of them)."""
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
            if not pieces and kept_of_long_line is None and chunk[pos] == 10:  # empty lines from a line's start
                run = _NEWLINES.match(chunk, pos).end()
                number, pos = number + run - pos, run
                continue
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
