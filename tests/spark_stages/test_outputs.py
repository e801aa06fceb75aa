"""The content checksum of a Parquet output: the same rows in the same order and files give the same
checksum whatever bytes the writer chose; any change of a value, the order or the files changes it."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_stages.outputs import content_checksum, write_json

pytestmark = pytest.mark.spark

ROWS = [{"id": f"doc-{i}", "text": f"text number {i} 文本", "score": i / 7, "tags": [i, i + 1]} for i in range(50)]


def write(folder, parts: list[list[dict]], **options):
    folder.mkdir()
    for i, rows in enumerate(parts):
        pq.write_table(pa.Table.from_pylist(rows), folder / f"part-{i:05d}.parquet", **options)
    return folder


def test_same_rows_same_checksum_whatever_the_bytes(spark, tmp_path):
    a = write(tmp_path / "a", [ROWS[:20], ROWS[20:]], compression="zstd")
    b = write(tmp_path / "b", [ROWS[:20], ROWS[20:]], compression="snappy", row_group_size=7)
    assert (a / "part-00000.parquet").read_bytes() != (b / "part-00000.parquet").read_bytes()
    assert content_checksum(spark, a) == content_checksum(spark, b)
    assert content_checksum(spark, a).startswith("50:")


def test_a_changed_value_order_or_split_changes_the_checksum(spark, tmp_path):
    reference = content_checksum(spark, write(tmp_path / "ref", [ROWS[:20], ROWS[20:]]))
    changed = [dict(r) for r in ROWS]
    changed[33]["text"] += "!"
    swapped = ROWS[:5] + [ROWS[6], ROWS[5]] + ROWS[7:]
    variants = {"value": [changed[:20], changed[20:]], "order": [swapped[:20], swapped[20:]],
                "split": [ROWS[:21], ROWS[21:]]}
    for name, parts in variants.items():
        assert content_checksum(spark, write(tmp_path / name, parts)) != reference, name


def test_maps_inside_structs_and_lists_are_summed_and_every_value_counts(spark, tmp_path):
    """Spark refuses to hash a map wherever it sits: a map inside a struct or a list failed the checksum (a
    top-level map alone had been turned into JSON, which a first mend used for all: the diff review found it
    wrote a binary key as a new Java object name each time, and lost a timestamp's microseconds)."""
    import datetime

    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    when = pa.struct([("at", pa.timestamp("us", "UTC")), ("m", pa.map_(pa.string(), pa.int8()))])
    schema = pa.schema([("id", pa.string()), ("bytes", pa.map_(pa.binary(), pa.binary())), ("when", when)])
    for name, micro in (("t0", 0), ("t1", 1)):
        (tmp_path / name).mkdir()
        row = {"id": "a", "bytes": [(b"\x00\x01", b"v")], "when": {"at": base + datetime.timedelta(microseconds=micro),
                                                                  "m": [("k", 1)]}}
        pq.write_table(pa.Table.from_pylist([row], schema), tmp_path / name / "part-00000.parquet")
    first = content_checksum(spark, tmp_path / "t0")
    assert first == content_checksum(spark, tmp_path / "t0") != content_checksum(spark, tmp_path / "t1")
    rows = [{"id": f"d{i}", "meta": {"tags": [("k", str(i))]}, "pairs": [[("a", i)]]} for i in range(5)]
    schema = pa.schema([("id", pa.string()), ("meta", pa.struct([("tags", pa.map_(pa.string(), pa.string()))])),
                        ("pairs", pa.list_(pa.map_(pa.string(), pa.int64())))])
    folder = tmp_path / "nested"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema), folder / "part-00000.parquet")
    changed = [dict(r, meta={"tags": [("k", "other")]}) if r["id"] == "d3" else r for r in rows]
    (tmp_path / "changed").mkdir()
    pq.write_table(pa.Table.from_pylist(changed, schema), tmp_path / "changed" / "part-00000.parquet")
    checksum = content_checksum(spark, folder)
    assert checksum.startswith("5:") and checksum != content_checksum(spark, tmp_path / "changed")


def test_an_empty_output_has_a_checksum(spark, tmp_path):
    (tmp_path / "empty").mkdir()
    assert content_checksum(spark, tmp_path / "empty") == "0:0000000000000000"


def test_a_json_written_whole_leaves_a_folder_by_its_temporary_name_alone(tmp_path):
    """Found by review: a split's value mixture.json.tmp is a shards folder beside mixture.json, and
    write_json's temporary had that name: the job failed removing it, after every folder was written."""
    (tmp_path / "mixture.json.tmp").mkdir()
    write_json(tmp_path / "mixture.json", {"a": 1})
    assert json.loads((tmp_path / "mixture.json").read_text()) == {"a": 1} and (tmp_path / "mixture.json.tmp").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mixture.json", "mixture.json.tmp"]  # no temporary left
