"""HTTP payloads: every Content-Encoding a server sends undone within the limit (a bomb costs its limit), a
damaged or unknown one a clear error, and bytes that are not text told by their bytes."""

import gzip
import random
import tracemalloc
import zlib

import brotli
import pytest
import zstandard

from prep.extract.payload import PayloadError, TooLarge, binary_kind, decoded

PAGE = "<html><body><p>Debian is a free operating system, made by volunteers.</p></body></html>".encode() * 50


@pytest.mark.parametrize("name, encode", [
    ("gzip", gzip.compress), ("x-gzip", gzip.compress), ("deflate", zlib.compress),
    ("deflate", lambda b: zlib.compress(b)[2:-4]),  # raw deflate, as some servers send it
    ("br", brotli.compress), ("zstd", zstandard.ZstdCompressor().compress), ("identity", lambda b: b)])
def test_each_encoding_is_undone(name, encode):
    assert decoded(encode(PAGE), name, 10 * len(PAGE)) == PAGE


def test_encodings_applied_in_turn_are_undone_in_reverse():
    assert decoded(brotli.compress(gzip.compress(PAGE)), "gzip, br", 10 * len(PAGE)) == PAGE


@pytest.mark.parametrize("name, encode", [("gzip", gzip.compress), ("deflate", zlib.compress),
                                          ("br", brotli.compress), ("zstd", zstandard.ZstdCompressor().compress)])
def test_a_bomb_costs_its_limit(name, encode):
    bomb = encode(b"a" * 50_000_000)
    with pytest.raises(TooLarge):
        decoded(bomb, name, 1_000_000)


@pytest.mark.parametrize("name, body", [("gzip", b"\x1f\x8b not gzip"), ("br", b"not brotli at all"),
                                        ("zstd", b"\x28\xb5\x2f\xfd broken"), ("compress", b"..."),
                                        ("rot13", b"...")])
def test_a_damaged_or_unknown_encoding_is_a_clear_error(name, body):
    with pytest.raises(PayloadError):
        decoded(body, name, 1_000_000)


@pytest.mark.parametrize("name, encode", [
    ("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", lambda b: zlib.compress(b)[2:-4]),
    ("br", brotli.compress), ("zstd", zstandard.ZstdCompressor().compress)])
def test_a_stream_cut_short_is_a_payload_cut_short_not_a_shorter_page(name, encode):
    whole = encode(PAGE * 40)
    with pytest.raises(PayloadError, match="ends early"):
        decoded(whole[:len(whole) // 2], name, 10 * len(PAGE) * 40)


def test_a_chain_of_encodings_is_undone_to_a_few_and_no_further():
    layered = PAGE
    for _ in range(4):
        layered = gzip.compress(layered, compresslevel=0)
    assert decoded(gzip.compress(gzip.compress(PAGE)), "gzip, gzip, identity", 10 * len(PAGE)) == PAGE
    with pytest.raises(PayloadError, match="4 Content-Encodings"):
        decoded(layered, "gzip," * 4, 10 * len(layered))
    with pytest.raises(PayloadError, match="10000 Content-Encodings"):  # 50 KB of header, refused before any work
        decoded(layered, ",".join(["gzip"] * 10_000), 10 * len(layered))


def test_bytes_that_are_not_text_are_told_whatever_they_are_called():
    assert binary_kind(b"\x89PNG\r\n\x1a\n" + bytes(100)) == "png"
    assert binary_kind(b"%PDF-1.7\n...") == "pdf"
    assert binary_kind(b"<html>" + bytes(range(256)) * 10) == "binary"
    assert binary_kind(PAGE) is None
    assert binary_kind("<p>日本語のページ、Shift_JIS で</p>".encode("shift_jis")) is None
    assert binary_kind("<p>中文网页</p>".encode("utf-16")) is None  # a byte order mark
    assert binary_kind("<p>wide text</p>".encode("utf-16-le"), "UTF-16LE") is None  # declared
    assert binary_kind("<p>wide text</p>".encode("utf-16-le")) == "binary"  # neither: what a browser shows too
    assert binary_kind("\x1b$B$3$s$K$A$O\x1b(B".encode("ascii")) is None  # ISO-2022-JP shifts with ESC


def test_noise_that_claims_utf_16_is_not_text_and_utf_16_text_is():
    # its bytes had not been looked at: 200 KB of noise declared UTF-16 became a document of 100,100 characters
    noise = random.Random(0).randbytes(200_000)
    assert binary_kind(b"\xff\xfe" + noise) == binary_kind(b"\xfe\xff" + noise) == "binary"
    assert binary_kind(noise, "utf-16") == binary_kind(noise, "UTF-16BE") == "binary"
    # real UTF-16 text, astral characters (surrogate pairs a sample's runs may split) and CJK included
    text = ("<p>Debian 是一个自由的操作系统 🐧 made by volunteers, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and 日本語も。</p>\n" * 3000)
    assert binary_kind(text.encode("utf-16")) is None
    assert binary_kind(text.encode("utf-16-be"), "utf-16be") is None
    assert binary_kind(text.encode("utf-16-le"), "utf-16") is None
    # an icon font's private-use glyphs and a page's own U+FFFD are text (a first version refused them)
    icons = ("<li><i>\ue001</i> Home <i>\uf015</i> Docs \ufffd</li>\n" * 2000)
    assert binary_kind(icons.encode("utf-16")) is None
    assert binary_kind((icons + "\ud800").encode("utf-16-le", "surrogatepass"), "utf-16") is None  # one is nothing


def test_every_gzip_member_and_zstd_frame_is_undone_and_bytes_after_the_last_are_left_as_a_browser_does():
    # only the first member or frame was decoded (19 bytes of a 27 KB page); bytes after the stream that start no
    # member are no part of the page a browser shows (Chromium and Firefox end the page there)
    halves = PAGE[:len(PAGE) // 2], PAGE[len(PAGE) // 2:]
    zstd = zstandard.ZstdCompressor().compress
    for name, encode in (("gzip", gzip.compress), ("zstd", zstd)):
        assert decoded(encode(halves[0]) + encode(halves[1]), name, 10 * len(PAGE)) == PAGE
        assert decoded(encode(halves[0]) + encode(halves[1]) + b"JUNK" * 100, name, 10 * len(PAGE)) == PAGE
        with pytest.raises(TooLarge):  # the limit holds over the members together
            decoded(encode(halves[0]) + encode(halves[1]), name, len(PAGE) - 1)
        with pytest.raises(PayloadError, match="ends early"):  # a second member cut short is a page cut short
            decoded(encode(halves[0]) + encode(halves[1])[:-10], name, 10 * len(PAGE))
    assert decoded(zlib.compress(PAGE) + b"JUNK" * 100, "deflate", 10 * len(PAGE)) == PAGE


def test_chunks_too_small_to_be_a_server_s_are_refused_before_they_are_joined():
    # 2-byte chunks: 9.5 MB of them joined one by one took 2 s and 300 MB
    from prep.extract.payload import dechunked

    tiny = b"".join(b"2\r\nxy\r\n" for _ in range(100_000)) + b"0\r\n\r\n"
    with pytest.raises(PayloadError, match="chunks"):
        dechunked(tiny)
    body = PAGE * 20
    small = b"".join(b"%x\r\n" % len(body[i:i + 64]) + body[i:i + 64] + b"\r\n" for i in range(0, len(body), 64))
    assert dechunked(small + b"0\r\n\r\n") == body


def test_an_empty_zstd_frame_costs_nothing_and_the_next_frame_is_decoded_once():
    # the frame after an empty one was decoded twice: a paragraph sent once came out twice
    zstd = zstandard.ZstdCompressor().compress
    assert decoded(zstd(b"") + zstd(b"world"), "zstd", 1000) == b"world"
    assert decoded(zstd(PAGE[:100]) + zstd(b"") * 3 + zstd(PAGE[100:]), "zstd", 10 * len(PAGE)) == PAGE


@pytest.mark.parametrize("name, body", [
    ("gzip", gzip.compress(b"") * 50_000 + gzip.compress(PAGE)),
    ("zstd", zstandard.ZstdCompressor().compress(b"") * 120_000 + zstandard.ZstdCompressor().compress(PAGE)),
    ("zstd", zstandard.ZstdCompressor().compress(PAGE[:100]) + b"\x50\x2a\x4d\x18\x00\x00\x00\x00" * 150_000
     + zstandard.ZstdCompressor().compress(PAGE[100:]))], ids=["gzip-members", "zstd-frames", "zstd-skippable"])
def test_many_members_or_frames_cost_their_own_bytes_not_a_copy_of_the_rest_each(name, body):
    # the rest of the body was copied after every member or frame: 480,000 empty gzip members (24 KB of WARC
    # file) took 99 s, 1.2 M skippable frames 230 s; the copies show as memory
    tracemalloc.start()
    try:
        assert decoded(body, name, 10_000_000) == PAGE
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(body) // 4, (peak, len(body))


def test_a_zstd_frame_whose_window_passes_what_browsers_decode_says_so():
    # RFC 9659: an HTTP zstd decoder need not take a window past 8 MB (Chromium and Firefox refuse them); the
    # decoder holds the window whatever the page's size
    wide = zstandard.ZstdCompressionParameters.from_level(3, window_log=24)
    frame = zstandard.ZstdCompressor(compression_params=wide).compress(PAGE * 2000)  # 9.2 MB of page
    with pytest.raises(PayloadError, match="window passes 8 MB"):
        decoded(frame, "zstd", 20_000_000)
    assert decoded(zstandard.ZstdCompressor().compress(PAGE * 2000), "zstd", 20_000_000) == PAGE * 2000


def test_a_zstd_skippable_frame_is_passed_over_once():
    # the reader passed over it and the decoder that finds where a frame ends stopped at it: the page came twice
    skippable = b"\x50\x2a\x4d\x18\x04\x00\x00\x00abcd"
    frame = zstandard.ZstdCompressor().compress(PAGE)
    assert decoded(skippable + frame, "zstd", 10 * len(PAGE)) == PAGE
    assert decoded(frame + skippable + frame, "zstd", 10 * len(PAGE)) == PAGE + PAGE
