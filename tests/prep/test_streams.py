import gzip

import pytest
import zstandard

from prep.streams import RAW_KEEP_BYTES, StreamDamaged, decompressed_chunks, split_lines


def lines_of(chunks, max_bytes=100):
    return [(l.number, l.data, l.too_long) for l in split_lines(iter(chunks), max_bytes)]


def test_lines_split_across_chunks_and_last_line_without_newline():
    assert lines_of([b"ab", b"c\nde", b"f\n", b"gh"]) == [(1, b"abc", False), (2, b"def", False), (3, b"gh", False)]


def test_line_over_the_limit_is_flagged_and_not_accumulated():
    long_line = [b"x" * 60, b"x" * 60, b"x" * 60 + b"\nok\n"]
    result = lines_of(long_line, max_bytes=100)
    assert result[0][0] == 1 and result[0][2] is True and len(result[0][1]) <= max(RAW_KEEP_BYTES, 180)
    assert result[1] == (2, b"ok", False)


def test_truncated_zstd_is_reported_after_the_complete_lines(tmp_path):
    data = b"".join(b'{"text": "line %d"}\n' % i for i in range(20000))
    compressed = zstandard.ZstdCompressor().compress(data)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(StreamDamaged, match="zstd"):
        b"".join(decompressed_chunks(str(path)))


def test_multi_frame_zstd_reads_every_frame(tmp_path):
    path = tmp_path / "two.jsonl.zst"
    c = zstandard.ZstdCompressor()
    path.write_bytes(c.compress(b"a\n") + c.compress(b"b\n"))
    assert b"".join(decompressed_chunks(str(path))) == b"a\nb\n"


def test_truncated_gzip_is_reported(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    compressed = gzip.compress(b"".join(b'{"text": "%d"}\n' % i for i in range(20000)))
    path.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(StreamDamaged, match="gzip"):
        b"".join(decompressed_chunks(str(path)))


def test_garbage_with_zstd_suffix_is_reported(tmp_path):
    path = tmp_path / "garbage.jsonl.zst"
    path.write_bytes(b"this is not zstd at all" * 10)
    with pytest.raises(StreamDamaged):
        b"".join(decompressed_chunks(str(path)))
