"""An HTTP payload as the page's bytes: its Content-Encoding undone within a size limit, and a look at the
bytes to tell text from what only claims to be (an image or an archive served as text/html).

The WARC reader (prep/extract/warc.py) reads each record's payload as the server sent it and decodes it
here rather than in fastwarc: a compressed payload is decoded at most `limit` bytes far, so that a record of a
few kilobytes that inflates to gigabytes costs its limit and nothing else (fastwarc's decoding of a 97 KB
record inflating to 100 MB lost its place in the file, and every later record with it).
"""

import re
import zlib

import brotli
import numpy as np
import zstandard

from prep.extract.encoding import BYTE_ORDER_MARKS, python_codec

CHUNK = 1 << 16  # compressed bytes fed to a decoder at a time
MAX_CHUNK_LINE = 1024  # bytes a chunk's size line (hex size, extensions) may take
HEX_DIGITS = b"0123456789abcdefABCDEF"
MAX_ENCODINGS = 3  # Content-Encodings undone at most (servers send one; a chain of 10,000 cost 10 s a record)
# The magic numbers of what servers most often label text/html by mistake, at the first byte: (prefix, name);
# none of them is the way a page of text starts
MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF87a", "gif"), (b"GIF89a", "gif"),
         (b"%PDF-", "pdf"), (b"PK\x03\x04", "zip"), (b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"),
         (b"7z\xbc\xaf\x27\x1c", "7z"), (b"Rar!\x1a\x07", "rar"), (b"\x7fELF", "elf"), (b"\x00asm", "wasm"),
         (b"wOFF", "woff"), (b"wOF2", "woff"), (b"OggS\x00", "ogg"), (b"fLaC\x00", "flac"), (b"ID3\x03", "mp3"),
         (b"ID3\x04", "mp3"), (b"\x1a\x45\xdf\xa3", "webm"), (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "ole"),
         (b"\x00\x00\x01\x00", "ico"))
# Bytes that text holds (almost) never: C0 controls but tab, line feed, form feed, carriage return and escape
# (ISO-2022 pages shift with it)
CONTROL = np.ones(256, dtype=bool)
CONTROL[[0x09, 0x0A, 0x0C, 0x0D, 0x1B]] = False
CONTROL[0x20:] = False
MAX_CONTROL_SHARE = 0.01  # text with more control bytes than this share is not text (a NUL-padded binary)
# bytes looked at, evenly spread (binary data has its control bytes everywhere): the whole of a 145 KB page cost
# 0.27 ms, a tenth of its extraction
SAMPLE_BYTES = 16384
# UTF-16 text (a byte order mark's, or the header's) is half NUL bytes where it is ASCII: it is looked at as
# characters instead, in WIDE_WINDOWS runs of WIDE_WINDOW_UNITS spread over it (a run's ends may split one
# surrogate pair each: 0.2% of the sample at most). Random bytes as UTF-16 are 3% unpaired surrogates, which
# text never holds: 200 KB of noise declared UTF-16 had been a document of 100,100 characters. (Private-use
# characters, 10% of noise, are an icon font's glyphs in real pages, and U+FFFD a page's own: neither counts.)
WIDE_WINDOWS, WIDE_WINDOW_UNITS = 8, 1024
NOT_WIDE_TEXT = re.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\ud800-\udfff\ufffe\uffff]")


ENDS_EARLY = "compressed payload ends early (cut short)"
GZIP_MAGIC, ZSTD_MAGIC = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"
# AFTER_THE_STREAM: gzip's members and zstd's frames are decoded one after another (a server may send several);
# bytes after the last that start none are no part of the page, as browsers show it (Chromium and Firefox end
# the page there), and are left

# Compressed bytes are fed to a decoder a piece at a time and the decoder's place kept as an offset: the rest
# of the body was copied after each gzip member or zstd frame (unused_data), and 480,000 empty members, 24 KB
# of WARC file, took 99 s. A member's first piece is small and the next ones double up to CHUNK, so that an
# empty member costs its own bytes, not CHUNK's.
FIRST_PIECE = 512
# zstd's decoder takes no output bound: a piece this size decodes to at most ~32 MB (an RLE block of 4 bytes
# is 128 KB), so the limit is passed by at most that before it is seen
ZSTD_PIECE = 1024
MAX_ZSTD_WINDOW = 1 << 23  # 8 MB: what RFC 9659 asks an HTTP zstd decoder to support, as browsers do
MIN_CHUNK_BYTES = 32  # a chunked body's bytes per chunk on average, at least: 2-byte chunks, 9.5 MB of them
# joined one at a time, took 2 s (servers send kilobytes a chunk; a page streamed a line at a time, ~100 bytes)


class PayloadError(ValueError):
    """A payload that cannot be decoded; the message says why."""


class TooLarge(ValueError):
    """A payload that decodes past its limit."""


def decoded(body: bytes, encodings: str | None, limit: int) -> bytes:
    """`body` with its Content-Encoding (`gzip, br`: applied in that order, undone in reverse) undone, at most
    `limit` bytes; TooLarge past it, PayloadError for an encoding that is damaged, ends early (a stream cut
    short is a page cut short, as a record cut short is), is not one of gzip, deflate, br, zstd and identity,
    or is one of more than MAX_ENCODINGS."""
    names = [e.strip().lower() for e in (encodings or "").split(",") if e.strip()]
    if len([name for name in names if name not in ("identity", "none")]) > MAX_ENCODINGS:
        raise PayloadError(f"{len(names)} Content-Encodings (at most {MAX_ENCODINGS} are undone)")
    for name in reversed(names):
        if name in ("identity", "none"):
            continue
        if name in ("gzip", "x-gzip"):
            body = _inflate(body, zlib.MAX_WBITS | 16, limit)
        elif name == "deflate":  # zlib-wrapped as the standard says, or raw as some servers send it
            try:
                body = _inflate(body, zlib.MAX_WBITS, limit)
            except PayloadError as wrapped:
                try:
                    body = _inflate(body, -zlib.MAX_WBITS, limit)
                except PayloadError as raw:  # a stream cut short, read either way, is said to be so
                    raise (raw if str(raw) == ENDS_EARLY else wrapped) from None
        elif name == "br":
            body = _unbrotli(body, limit)
        elif name == "zstd":
            body = _unzstd(body, limit)
        else:
            raise PayloadError(f"Content-Encoding {name[:40]!r} is not one tokenmill decodes")
        if len(body) > limit:
            raise TooLarge(f"decodes past {limit} bytes")
    return body


def dechunked(body: bytes) -> bytes:
    """The body of an HTTP response in chunked transfer encoding, its chunks joined (crawlers that write the
    response as it came keep them: wget's WARCs); the body as it is where it does not start with a chunk's
    size line (a crawler that joined the chunks and left the header). PayloadError where a chunk runs past the
    body, a size line is not one, or the chunks are too many for the body (MIN_CHUNK_BYTES). Linear, and never
    longer than the body."""
    out, at, view = bytearray(), 0, memoryview(body)
    max_chunks = 16 + len(body) // MIN_CHUNK_BYTES
    for _ in range(max_chunks + 1):
        end = body.find(b"\n", at, at + MAX_CHUNK_LINE)
        size_field = body[at:end].split(b";", 1)[0].strip() if end >= 0 else b""
        if not size_field or size_field.strip(HEX_DIGITS):
            if at == 0:
                return body
            raise PayloadError("damaged chunked transfer encoding: a chunk's size line is not one")
        size = int(size_field, 16)
        if size == 0:
            return bytes(out)
        if end + 1 + size > len(body):
            raise PayloadError(ENDS_EARLY)
        out += view[end + 1:end + 1 + size]
        at = end + 1 + size
        at += 2 if body.startswith(b"\r\n", at) else 1 if body.startswith(b"\n", at) else 0
    raise PayloadError(f"chunked transfer encoding in more than {max_chunks} chunks for {len(body)} bytes "
                       f"(fewer than {MIN_CHUNK_BYTES} bytes a chunk on average)")


def _inflate(body: bytes, wbits: int, limit: int) -> bytes:
    """zlib's stream (deflate), or gzip's members one after another (wbits | 16), at most `limit` bytes."""
    out, view, at = bytearray(), memoryview(body), 0
    while True:
        decoder, size = zlib.decompressobj(wbits), FIRST_PIECE
        while not decoder.eof:
            if at >= len(body):
                raise PayloadError(ENDS_EARLY)
            piece = view[at:at + size]
            size = min(2 * size, CHUNK)  # see FIRST_PIECE
            try:
                out += decoder.decompress(piece, limit + 1 - len(out))
            except zlib.error as e:
                raise PayloadError(f"damaged compressed payload: {e}") from None
            if len(out) > limit:
                raise TooLarge(f"decodes past {limit} bytes")
            at += len(piece) - len(decoder.unused_data)  # (under the limit, every byte before the end is taken)
        if not (wbits & 16 and body.startswith(GZIP_MAGIC, at)):  # bytes after the last member: AFTER_THE_STREAM
            return bytes(out)


def _unbrotli(body: bytes, limit: int) -> bytes:
    decoder, out, size = brotli.Decompressor(), [], 0
    try:
        for at in range(0, len(body), CHUNK):
            piece = decoder.process(body[at:at + CHUNK], output_buffer_limit=limit + 1 - size)
            while True:  # a decoder that stopped at its output limit takes no input until it is drained
                size += len(piece)
                out.append(piece)
                if size > limit:
                    raise TooLarge(f"decodes past {limit} bytes")
                if decoder.is_finished() or decoder.can_accept_more_data():
                    break
                piece = decoder.process(b"", output_buffer_limit=limit + 1 - size)
    except brotli.error as e:
        raise PayloadError(f"damaged compressed payload: {e}") from None
    if not decoder.is_finished():
        raise PayloadError(ENDS_EARLY)
    return b"".join(out)


def _unzstd(body: bytes, limit: int) -> bytes:
    """zstd's frames one after another, each decoded once, at most `limit` bytes."""
    out, view, at, first = bytearray(), memoryview(body), 0, True
    decompressor = zstandard.ZstdDecompressor(max_window_size=MAX_ZSTD_WINDOW)
    while True:
        at = _past_skippable_frames(body, at)
        if not first and not body.startswith(ZSTD_MAGIC, at):  # bytes after the last frame: see AFTER_THE_STREAM
            return bytes(out)
        first = False
        frame = decompressor.decompressobj(read_across_frames=False)
        while not frame.eof:
            if at >= len(body):
                raise PayloadError(ENDS_EARLY)
            piece = view[at:at + ZSTD_PIECE]
            try:
                out += frame.decompress(piece)
            except zstandard.ZstdError as e:
                if "too much memory" in str(e):  # zstd's words for a window past max_window_size
                    raise PayloadError(f"a zstd frame whose window passes {MAX_ZSTD_WINDOW >> 20} MB (RFC 9659's "
                                       "bound for HTTP, as browsers')") from None
                raise PayloadError(f"damaged compressed payload: {e}") from None
            if len(out) > limit:
                raise TooLarge(f"decodes past {limit} bytes")
            at += len(piece) - len(frame.unused_data)


def _past_skippable_frames(body: bytes, at: int) -> int:
    """Where `body`'s zstd skippable frames from `at` on end (magic 0x184D2A50-5F, a 4-byte size, that many
    bytes of anything)."""
    while len(body) - at >= 8 and body[at + 1:at + 4] == b"\x2a\x4d\x18" and body[at] & 0xF0 == 0x50:
        at += 8 + int.from_bytes(body[at + 4:at + 8], "little")
    return at


def binary_kind(body: bytes, declared: str | None = None) -> str | None:
    """What the bytes are when they are not text (a file format by its magic number, or "binary" for bytes
    of which more than MAX_CONTROL_SHARE are control characters, in a sample of SAMPLE_BYTES), else None.
    `declared`: the charset the header declares (UTF-16 text is looked at as characters: NOT_WIDE_TEXT)."""
    for prefix, name in MAGIC:
        if body.startswith(prefix):
            return name
    if not body:
        return None
    if (wide := _wide_codec(body, declared)) is not None:
        units = len(body) // 2
        step = max(WIDE_WINDOW_UNITS, units // WIDE_WINDOWS)
        text = "".join(body[2 * at:2 * min(at + WIDE_WINDOW_UNITS, units)].decode(wide, "surrogatepass")
                       for at in range(0, units, step))  # (an unpaired surrogate decoded as itself)
        return "binary" if len(NOT_WIDE_TEXT.findall(text)) > MAX_CONTROL_SHARE * len(text) else None
    sample = np.frombuffer(body, dtype=np.uint8)[::max(1, len(body) // SAMPLE_BYTES)]
    return "binary" if np.count_nonzero(CONTROL[sample]) > MAX_CONTROL_SHARE * len(sample) else None


def _wide_codec(body: bytes, declared: str | None) -> str | None:
    """The UTF-16 codec the page will be decoded with (prep/extract/encoding.html_codec), if it is one."""
    for mark, codec in BYTE_ORDER_MARKS:
        if body.startswith(mark):
            return codec if codec.startswith("utf-16") else None
    codec = python_codec(declared)
    return codec if codec is not None and codec.startswith("utf-16") else None
