import gzip
import shutil
import struct
import subprocess

import pytest
import zstandard

from prep.ingest.streams import (
    CHUNK_BYTES,
    EXPANSION_FLOOR,
    MAX_EXPANSION,
    MAX_PIECE_BYTES,
    RAW_KEEP_BYTES,
    StreamDamaged,
    decompressed_chunks,
    split_lines,
)


def lines_of(chunks, max_bytes=100):
    return [(line.number, line.data, line.too_long) for line in split_lines(iter(chunks), max_bytes)]


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


# Reading compressed files as `gzip -d` and `zstd -d` do: frame by frame, trailing bytes ignored with a
# warning, and every byte before damage kept whatever the read size.

COMPRESS = {"gz": lambda data: gzip.compress(data, compresslevel=6, mtime=0),
            "zst": lambda data: zstandard.ZstdCompressor(level=3).compress(data)}
CLI = {"gz": ["gzip", "-dc"], "zst": ["zstd", "-dcq"]}
READ_SIZES = (4096, 65536, CHUNK_BYTES)


@pytest.fixture(scope="module")
def sample_bytes(sample_dir) -> bytes:
    """The sample corpus as one JSON Lines stream (11 MB: compressed, it spans several reads)."""
    return b"".join(zstandard.ZstdDecompressor().stream_reader(p.open("rb")).read()
                    for p in sorted(sample_dir.glob("*.jsonl.zst")))


def read_all(path, read_bytes=CHUNK_BYTES) -> tuple[bytes, list[str], str | None]:
    """(everything handed out, warnings, the damage reported or None)."""
    out, warnings = [], []
    try:
        for chunk in decompressed_chunks(str(path), warnings, read_bytes):
            out.append(chunk)
    except StreamDamaged as e:
        return b"".join(out), warnings, str(e)
    return b"".join(out), warnings, None


def cli_output(kind: str, path) -> bytes:
    """What the format's own command line tool writes before it stops (the reference)."""
    if shutil.which(CLI[kind][0]) is None:
        pytest.skip(f"{CLI[kind][0]} is not installed: no reference to compare with")
    return subprocess.run([*CLI[kind], str(path)], capture_output=True).stdout


def test_gzip_members_are_one_stream(tmp_path):
    path = tmp_path / "members.jsonl.gz"
    path.write_bytes(COMPRESS["gz"](b"a\n") + COMPRESS["gz"](b"b\n") + COMPRESS["gz"](b""))
    assert read_all(path) == (b"a\nb\n", [], None)


@pytest.mark.parametrize("kind", ["gz", "zst"])
@pytest.mark.parametrize("trailer", [b"garbage after the download", b"\x00" * 512, b"\x1f", b"\x28\xb5"])
def test_bytes_after_the_last_frame_are_ignored_with_a_warning(tmp_path, kind, trailer):
    data = b"".join(b'{"text": "record %d"}\n' % i for i in range(30))
    path = tmp_path / f"padded.jsonl.{kind}"
    path.write_bytes(COMPRESS[kind](data) + trailer)
    out, warnings, damage = read_all(path)
    assert (out, damage) == (data, None)
    assert len(warnings) == 1 and f"{len(trailer)} bytes" in warnings[0] and "ignored" in warnings[0]
    assert cli_output(kind, path) == data  # what the format's own tool recovers too


def test_zstd_skippable_frames_are_passed_over(tmp_path):
    def skippable(payload: bytes, nibble: int) -> bytes:
        return struct.pack("<II", 0x184D2A50 + nibble, len(payload)) + payload

    c = zstandard.ZstdCompressor()
    path = tmp_path / "skippable.jsonl.zst"
    path.write_bytes(skippable(b"metadata", 0) + c.compress(b"a\n") + skippable(b"", 7) + c.compress(b"b\n")
                     + skippable(b"x" * 100, 15))
    assert read_all(path) == (b"a\nb\n", [], None)


@pytest.mark.parametrize("kind", ["gz", "zst"])
@pytest.mark.parametrize("where", [300_000, CHUNK_BYTES - 1, CHUNK_BYTES])
def test_damage_keeps_everything_before_it_whatever_the_read_size(tmp_path, sample_bytes, kind, where):
    compressed = bytearray(COMPRESS[kind](sample_bytes))
    assert len(compressed) > 2 * CHUNK_BYTES
    compressed[where:where + 64] = b"\xff" * 64
    path = tmp_path / f"damaged.jsonl.{kind}"
    path.write_bytes(compressed)
    results = [read_all(path, size) for size in READ_SIZES]
    out, warnings, damage = results[0]
    assert damage is not None and kind.replace("gz", "gzip").replace("zst", "zstd") in damage
    assert all(r == results[0] for r in results), "the output before the damage depends on the read size"
    reference = cli_output(kind, path)
    assert len(out) >= len(reference) > where  # at least as much as the format's own tool recovers
    assert out.startswith(reference)


@pytest.mark.parametrize("kind", ["gz", "zst"])
@pytest.mark.parametrize("cut", [CHUNK_BYTES, CHUNK_BYTES + 1, 777_777])
def test_a_cut_file_keeps_everything_before_the_cut(tmp_path, sample_bytes, kind, cut):
    path = tmp_path / f"cut.jsonl.{kind}"
    path.write_bytes(COMPRESS[kind](sample_bytes)[:cut])
    out, warnings, damage = read_all(path)
    assert damage is not None and "truncated" in damage
    assert out == sample_bytes[:len(out)] and len(out) >= len(cli_output(kind, path)) > cut


def zeros(path, kind: str, mib: int) -> None:
    zero = bytes(1 << 20)
    with open(path, "wb") as raw:
        if kind == "zst":
            with zstandard.ZstdCompressor().stream_writer(raw) as writer:
                for _ in range(mib):
                    writer.write(zero)
        else:
            with gzip.GzipFile(fileobj=raw, mode="wb") as writer:
                for _ in range(mib):
                    writer.write(zero)


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_highly_compressed_file_comes_out_in_bounded_pieces(tmp_path, kind):
    # 48 MiB of zeros in a few KB (zstd: one 4-byte block per 128 KB; gzip ~1,000:1): no piece may be the
    # whole of it, or one small read of a hostile file would take an executor's memory.
    path = tmp_path / f"zeros.jsonl.{kind}"
    zeros(path, kind, 48)
    assert path.stat().st_size < CHUNK_BYTES
    pieces = list(map(len, decompressed_chunks(str(path))))
    assert sum(pieces) == 48 << 20 and max(pieces) <= MAX_PIECE_BYTES < sum(pieces)


def test_a_decompression_bomb_is_stopped_past_the_floor(tmp_path):
    # found by review: 5 KB of zstd made 160 MB of blank lines, read in minutes (1 MB: 32 GB, hours; lines of
    # {} a quarantined record each). Stopped once past EXPANSION_FLOOR, no piece over MAX_PIECE_BYTES before.
    path = tmp_path / "bomb.jsonl.zst"
    zeros(path, "zst", 256)
    pieces = []
    with pytest.raises(StreamDamaged, match="times as many: a decompression bomb"):
        for chunk in decompressed_chunks(str(path)):
            pieces.append(len(chunk))
    assert EXPANSION_FLOOR - MAX_PIECE_BYTES <= sum(pieces) <= EXPANSION_FLOOR and max(pieces) <= MAX_PIECE_BYTES


def test_text_that_expands_less_than_a_bomb_is_read_whole(tmp_path):
    path = tmp_path / "dump.jsonl.zst"
    text = b"".join(b'{"text": "record %d of a repetitive dump"}\n' % i for i in range(2_000_000))  # 95 MB, 76:1
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(text))
    assert len(text) > EXPANSION_FLOOR and len(text) < MAX_EXPANSION * path.stat().st_size
    assert sum(map(len, decompressed_chunks(str(path)))) == len(text)


def test_runs_of_empty_lines_are_counted_not_yielded():
    chunks = [b"a\n\n\n", b"\n\nb\n", b"\n" * 100_000, b"c", b"\n\n", b" \n"]
    assert lines_of(chunks) == [(1, b"a", False), (6, b"b", False), (100_007, b"c", False), (100_009, b" ", False)]


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_damage_deep_in_a_large_stream_is_recovered_in_bounded_memory(tmp_path, kind):
    """The frame is decompressed again up to the damaged chunk to keep what precedes the damage: a chunk at
    a time (a 93 MB .gz damaged at 90% once took 247 MB, its intact copy 66 MB)."""
    import os
    import tracemalloc

    data = b"".join(b'{"text": "%s"}\n' % os.urandom(3000).hex().encode() for _ in range(5000))  # ~30 MB
    # zstd's blocks carry no check of their own: its frame checksum finds the damage, at the frame's end
    checked = zstandard.ZstdCompressor(write_checksum=True)
    compress = checked.compress if kind == "zst" else COMPRESS[kind]
    compressed = bytearray(compress(data))
    assert len(compressed) > 12 * CHUNK_BYTES
    at = len(compressed) * 9 // 10
    compressed[at:at + 64] = bytes(64)
    path = tmp_path / f"damaged.jsonl.{kind}"
    path.write_bytes(bytes(compressed))
    tracemalloc.start()
    try:
        handed_out = damage = 0
        try:
            for chunk in decompressed_chunks(str(path)):
                handed_out += len(chunk)
        except StreamDamaged as e:
            damage = str(e)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert damage and handed_out > len(data) * 8 // 10  # what precedes the damage is kept ...
    assert peak < 12 * CHUNK_BYTES, peak  # ... in memory of a few chunks, not of the file read before it
