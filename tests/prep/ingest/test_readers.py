"""Every class of bad input is quarantined with its reason, file and line; nothing is dropped."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from prep.ingest.inputs import InputFile
from prep.ingest.readers import Document, FileError, FileWarning, Quarantined, ReaderConfig, read_file
from tests.conftest import write_lines

PROSE = "The package manager keeps track of every file it installs, so it can remove them again."


def read(path, **config):
    return list(read_file(InputFile(str(path), path.name), ReaderConfig(**config)))


@pytest.mark.parametrize(
    "line,error",
    [
        (b'{"text": "unterminated', "malformed JSON"),
        (b'{"text": "caf\xe9 au lait"}', "invalid UTF-8"),
        (b'["a", "list"]', "not an object"),
        (b'"just a string"', "not an object"),
        (b'{"title": "no text here"}', "missing field 'text'"),
        (b'{"text": 42}', "text is int"),
        (b'{"text": null}', "text is null"),
        (b'{"text": {"nested": "object"}}', "text is dict"),
        (b'{"text": "before\\u0000after"}', "NUL byte"),
        (b'{"text": "lone \\ud800 surrogate"}', "unpaired surrogate"),
        (b'{"text": "ok", "id": "bad \\udfff id"}', "id contains an unpaired surrogate"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"text": "ok", "n": ' + b"7" * 5000 + b"}", "Exceeds the limit"),  # int() refuses 5,000 digits
        (b'{"text": "ok", "id": ' + b"9" * 5000 + b"}", "malformed JSON"),
    ],
)
def test_bad_line_is_quarantined_with_reason_file_and_line(tmp_path, line, error):
    path = write_lines(tmp_path / "in.jsonl", [{"text": PROSE}, line, {"text": PROSE}])
    records = read(path)
    assert [type(r) for r in records] == [Document, Quarantined, Document]
    bad = records[1]
    assert error in bad.error
    assert (bad.file, bad.line, bad.raw) == ("in.jsonl", 2, line)


def test_a_line_whose_other_fields_grow_past_the_limit_as_metadata_is_quarantined(tmp_path):
    # 900 bytes of JSON, 1,800 once carried as ASCII metadata ("é" is \\u00e9): over a limit of 1,000
    records = ({"text": "x", "note": "é" * 300}, {"text": "x", "note": "é"})
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    path = write_lines(tmp_path / "in.jsonl", lines)
    over, under = read(path, max_record_bytes=1000)
    assert isinstance(over, Quarantined) and over.error == "record over 1000 bytes" and over.line == 1
    assert isinstance(under, Document) and json.loads(under.metadata) == {"note": "é"}


def test_record_over_the_size_limit_is_quarantined_without_parsing(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [{"text": "x" * 5000}, {"text": PROSE}])
    first, second = read(path, max_record_bytes=1000)
    assert isinstance(first, Quarantined) and "over 1000 bytes" in first.error and first.line == 1
    assert isinstance(second, Document) and second.id == "in.jsonl:2"


def test_bom_crlf_and_blank_lines(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "first"}\r\n\r\n   \n{"text": "second"}\r\n')
    records = read(path)
    assert [(r.text, r.id) for r in records] == [("first", "in.jsonl:1"), ("second", "in.jsonl:4")]


def test_id_kept_source_derived_and_other_fields_carried(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [{"id": 7, "text": PROSE, "url": "https://x", "score": 0.5}])
    (doc,) = read(path)
    assert (doc.id, doc.source) == ("7", "in.jsonl")
    assert json.loads(doc.metadata) == {"score": 0.5, "url": "https://x"}


@pytest.mark.parametrize("compress", ["gz", "zst"])
def test_truncated_compressed_file_keeps_records_before_the_damage(tmp_path, compress):
    lines = [{"text": f"{PROSE} {i}"} for i in range(30_000)]
    path = write_lines(tmp_path / f"in.jsonl.{compress}", lines, compress)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    records = read(path)
    assert isinstance(records[-1], FileError) and records[-1].file == path.name
    docs = [r for r in records if isinstance(r, Document)]
    assert 0 < len(docs) < len(lines)
    assert [d.text for d in docs[:3]] == [line["text"] for line in lines[:3]]


def test_what_a_damaged_chunk_decodes_to_before_its_damage_is_recovered_in_bounded_memory(tmp_path):
    import tracemalloc

    def block(last: int, kind: int, size: int) -> bytes:
        return (last | kind << 1 | size << 3).to_bytes(3, "little")

    # 400 zstd blocks of 4 bytes that each repeat one byte 128 KiB times (50 MB from 1.6 KB: under the size past
    # which such an expansion is a bomb, streams.EXPANSION_FLOOR), then a block of the reserved type: the damage
    # is in the first chunk read, and what comes before it is a line too long
    frame = b"\x28\xb5\x2f\xfd\x00" + bytes([7 << 3]) + (block(0, 1, 128 << 10) + b"a") * 400 + block(1, 3, 1) + b"x"
    path = tmp_path / "in.jsonl.zst"
    path.write_bytes(frame)
    tracemalloc.start()
    try:
        records = read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(records[-1], FileError) and "corrupt at byte 1608" in records[-1].error
    assert peak < 128 << 20, peak  # it once held all of it, twice


@pytest.mark.parametrize("compress", ["gz", "zst"])
def test_bytes_after_a_complete_stream_keep_every_record_and_warn(tmp_path, compress):
    lines = [{"text": f"{PROSE} {i}"} for i in range(30)]
    path = write_lines(tmp_path / f"in.jsonl.{compress}", lines, compress)
    path.write_bytes(path.read_bytes() + b"\x00\x00 half an appended download")
    records = read(path)
    assert [r.text for r in records[:-1]] == [line["text"] for line in lines]
    assert isinstance(records[-1], FileWarning) and records[-1].file == path.name
    assert "ignored" in records[-1].warning


@pytest.mark.parametrize("read_bytes", [1024, 1 << 20])
def test_records_before_damage_in_the_first_read_are_kept(tmp_path, sample_dir, read_bytes):
    lines = b"".join(zstandard.ZstdDecompressor().stream_reader(p.open("rb")).read()
                     for p in sorted(sample_dir.glob("*.jsonl.zst"))).splitlines(keepends=True)
    path = tmp_path / "in.jsonl.zst"
    damaged = bytearray(zstandard.ZstdCompressor().compress(b"".join(lines)))
    damaged[300_000:300_032] = b"\xff" * 32  # well inside the first MiB
    path.write_bytes(damaged)
    records = read(path, read_bytes=read_bytes)
    docs = [r for r in records if isinstance(r, Document)]
    assert isinstance(records[-1], FileError) and "corrupt" in records[-1].error
    assert len(docs) > 100 and [d.text for d in docs] == [json.loads(line)["text"] for line in lines[:len(docs)]]


def test_parquet_rows_are_read_and_bad_rows_quarantined(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": [PROSE, None, "second"], "lang": ["en", "en", "de"]}), path)
    good, bad, second = read(path)
    assert (good.text, good.id, json.loads(good.metadata)) == (PROSE, "in.parquet:1", {"lang": "en"})
    assert isinstance(bad, Quarantined) and bad.error == "text is null" and bad.line == 2
    assert second.text == "second"


def test_parquet_text_over_the_byte_limit_is_quarantined_even_under_it_in_characters(tmp_path):
    path = tmp_path / "in.parquet"
    over, under = "数据" * 200, "数据" * 150  # 400 characters are 1,200 bytes; 300 are 900
    pq.write_table(pa.table({"text": [over, under]}), path)
    first, second = read(path, max_record_bytes=1000)
    assert isinstance(first, Quarantined) and first.error == "record over 1000 bytes" and first.line == 1
    assert isinstance(second, Document) and second.text == under


@pytest.mark.parametrize("column", [
    pa.array([0] * 5 + [2**62] + [0] * 2994, pa.int64()).cast(pa.timestamp("us")),  # past year 9999
    pa.array([0] * 5 + [2**31 - 1] + [0] * 2994, pa.int32()).cast(pa.date32()),
    pa.array([0] * 5 + [2**62] + [0] * 2994, pa.int64()).cast(pa.duration("s")),
    pa.array([0] * 3000, pa.int64()).cast(pa.timestamp("us", tz="Mars/Olympus")),  # no such time zone
], ids=["timestamp", "date", "duration", "time zone"])
def test_a_parquet_value_python_cannot_hold_quarantines_its_row_and_the_others_are_read(tmp_path, column):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": [f"document {i}" for i in range(3000)], "at": column}), path)
    records = read(path)
    bad = [r for r in records if isinstance(r, Quarantined)]
    assert len(records) == 3000 and not any(isinstance(r, FileError) for r in records)
    assert bad and all(r.error.startswith("unreadable value: ") for r in bad)
    zone = getattr(column.type, "tz", None)  # an unknown time zone fails every row; a value out of range its own
    assert len(bad) == (3000 if zone else 1) and (zone or bad[0].line == 6)


def test_parquet_batches_are_sized_by_the_row_groups_bytes_and_a_huge_single_row_is_not_read(tmp_path):
    path = tmp_path / "in.parquet"
    # 40 rows of 3 MB each, in a file of kilobytes: read in batches of 64 MB, never the 120 MB at once
    pq.write_table(pa.table({"text": ["word " * 600_000 + str(i) for i in range(40)]}), path, row_group_size=40)
    docs = read(path)
    assert [d.text[-2:] for d in docs] == [f" {i}"[-2:] for i in range(40)]
    single = tmp_path / "single.parquet"
    pq.write_table(pa.table({"text": ["word " * 5_000_000]}), single)  # 25 MB, one row: over 2 x 10 MB
    (over,) = read(single)
    assert isinstance(over, Quarantined) and over.error.startswith("record over 10000000 bytes (its row group holds")


def test_a_dictionary_of_large_strings_is_read_in_batches_of_the_decoded_size(tmp_path, parquet_batch_bytes):
    """Parquet stores a repeated string once (dictionary encoding, its default): the footer's sizes count it
    once, and 1,000 rows of one 512 KB string from a 500-byte file were one 524 MB batch."""
    from prep.ingest.readers import parquet_rows

    path = tmp_path / "dict.parquet"
    pq.write_table(pa.table({"text": [f"{i % 2}" * (256 << 10) for i in range(200)]}), path, compression="zstd")
    assert path.stat().st_size < 64 << 10
    rows = list(parquet_rows(str(path), 1024, 4 << 20, 10_000_000))
    assert len(rows) == 200 and all(len(r["text"]) == 256 << 10 for r in rows)
    # a batch of the budget (the dictionary's two entries)
    assert max(parquet_batch_bytes) <= (4 << 20) + (512 << 10), parquet_batch_bytes


def test_parquet_without_text_column_quarantines_every_row(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"body": ["a", "b"]}), path)
    assert [r.error for r in read(path)] == ["missing field 'text'"] * 2


def test_corrupt_parquet_is_a_file_error(tmp_path):
    path = tmp_path / "in.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    (error,) = read(path)
    assert isinstance(error, FileError) and "parquet" in error.error


def test_txt_is_one_document_and_invalid_utf8_is_quarantined(tmp_path):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_bytes(b"\xef\xbb\xbf" + PROSE.encode())
    bad.write_bytes(b"caf\xe9")
    (doc,) = read(good)
    assert (doc.text, doc.id) == (PROSE, "good.txt")
    (q,) = read(bad)
    assert isinstance(q, Quarantined) and "invalid UTF-8" in q.error and q.line is None


def test_metadata_of_a_tokenmill_output_is_merged_and_odd_fields_kept(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [
        {"text": PROSE, "metadata": json.dumps({"url": "u"}), "lang": "en"},
        {"text": PROSE, "metadata": [1, 2], "source": 42},
    ])
    first, second = read(path)
    assert json.loads(first.metadata) == {"url": "u", "lang": "en"}
    assert json.loads(second.metadata) == {"metadata": [1, 2], "source": 42} and second.source == "in.jsonl"


def test_a_value_no_rule_foresaw_quarantines_its_record_instead_of_raising(tmp_path):
    from prep.ingest.readers import to_document

    file = InputFile(str(tmp_path / "x.parquet"), "x.parquet")
    mixed_keys = {"text": PROSE, "metadata": {1: "a", "b": 2}}  # json.dumps(sort_keys=True) raises TypeError
    reason = to_document(mixed_keys, file, 3)
    assert isinstance(reason, str) and reason.startswith("unreadable record: TypeError")


def test_a_batch_of_read_records_is_sized_by_bytes_too(tmp_path):
    """Found by review: batches were 512 records whatever their size (512 of 4 MB made a batch past the 2 GiB an
    Arrow string column holds: a TypeError in the task); documents and quarantined lines count alike."""
    from prep.ingest.records import read_records

    big = "w" * 300_000
    path = write_lines(tmp_path / "in.jsonl", [{"text": f"{big} {i}"} for i in range(9)], None)
    path.write_bytes(path.read_bytes() + b'{"text": "' + b"q" * 300_000 + b"\n" + b'{"text": "last"}\n')
    batches = list(read_records([(0, InputFile(str(path), path.name))], ReaderConfig(), batch_bytes=1 << 20))
    assert [b.num_rows for b in batches] == [4, 4, 3]  # each until past 1 MiB (4 x 300 KB), in order
    assert [s for b in batches for s in b.column("status").to_pylist()] == ["doc"] * 9 + ["quarantined", "doc"]
    with pytest.raises(ValueError, match="max_record_bytes is at most"):
        ReaderConfig(max_record_bytes=3 << 30)
