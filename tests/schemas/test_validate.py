"""The validator accepts good shards and names the shard and the problem for each kind of damage."""

import json
import shutil

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from schemas.index import ShardEntry
from schemas.mixture import new_mixture
from schemas.shards import SHARD_SCHEMA, ShardFileError, checked_shard_mapping, file_checksum, shard_name
from schemas.validate import main, validate, validate_mixture
from tests.shard_fixtures import write_shards


def rewrite_index(folder, change):
    index = json.loads((folder / "index.json").read_text())
    change(index)
    (folder / "index.json").write_text(json.dumps(index))


def refresh_entry(folder, number):
    """After damaging a shard's content on purpose, make size and checksum agree again."""
    def fix(index):
        entry = index["shards"][number]
        entry["bytes"] = (folder / entry["file"]).stat().st_size
        entry["checksum"] = file_checksum(folder / entry["file"])
    rewrite_index(folder, fix)


def test_good_shards_pass(tmp_path, capsys):
    write_shards(tmp_path)
    assert validate(tmp_path) == [] and main([str(tmp_path)]) == 0
    assert "agree" in capsys.readouterr().out


def test_an_index_of_an_unknown_checksum_algorithm_is_refused(tmp_path):
    write_shards(tmp_path)
    rewrite_index(tmp_path, lambda index: index.update(checksum_algorithm="blake2b-128"))
    assert any("checksum_algorithm must be one of xxh3-128" in p for p in validate(tmp_path))


def damage_missing(folder):
    (folder / shard_name(1)).unlink()


def damage_truncated(folder):
    path = folder / shard_name(1)
    path.write_bytes(path.read_bytes()[:-100])


def damage_flipped_byte(folder):
    path = folder / shard_name(0)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def damage_not_arrow(folder):
    (folder / shard_name(0)).write_bytes(b"not an arrow file at all" * 100)
    refresh_entry(folder, 0)


def damage_row_count(folder):
    rewrite_index(folder, lambda index: index["shards"][1].update(rows=index["shards"][1]["rows"] + 1))


def damage_batch_rows(folder):
    rewrite_index(folder, lambda index: index["shards"][0]["batch_rows"].reverse())


def damage_stray_file(folder):
    shutil.copy(folder / shard_name(0), folder / shard_name(7))


def damage_totals(folder):
    rewrite_index(folder, lambda index: index["totals"].update(tokens=1))


@pytest.mark.parametrize("damage, shard, words", [
    (damage_missing, shard_name(1), "missing"),
    (damage_truncated, shard_name(1), "size"),
    (damage_flipped_byte, shard_name(0), "checksum"),
    (damage_not_arrow, shard_name(0), "not a readable Arrow"),
    (damage_row_count, shard_name(1), "rows, index says"),
    (damage_batch_rows, shard_name(0), "batch_rows"),
    (damage_stray_file, shard_name(7), "not in the index"),
    (damage_totals, "index.json", "totals.tokens"),
])
def test_each_kind_of_damage_is_named(tmp_path, capsys, damage, shard, words):
    write_shards(tmp_path)
    damage(tmp_path)
    problems = validate(tmp_path)
    assert any(p.startswith(shard) or shard in p.split(":")[0] for p in problems) and any(words in p for p in problems)
    assert main([str(tmp_path)]) == 1 and words in capsys.readouterr().err


@pytest.mark.parametrize("row, words, in_the_counts", [
    ((np.zeros(200, dtype=np.uint32), np.array([0, 200], dtype=np.int32)), "not a multiple of 128", "cannot fill"),
    ((np.full(256, 5, dtype=np.uint32), np.array([0, 100], dtype=np.int32)), "not all pad_id", None),
    ((np.full(256, 5, dtype=np.uint32), np.array([0, 300], dtype=np.int32)), "must rise from 0", "real tokens"),
    ((np.full(256, 5000, dtype=np.uint32), np.array([0, 256], dtype=np.int32)), "not below vocab_size", None),
])
def test_bad_rows_are_found(tmp_path, row, words, in_the_counts):
    write_shards(tmp_path, bad_row=row)
    problems = validate(tmp_path)
    assert any(p.startswith(shard_name(0)) and words in p for p in problems), problems
    quick = validate(tmp_path, quick=True)  # --quick trusts the rows: only counts that cannot add up show
    assert (quick == []) if in_the_counts is None else (len(quick) == 1 and in_the_counts in quick[0]), quick


def test_index_problems(tmp_path):
    assert "missing" in validate(tmp_path)[0]
    (tmp_path / "index.json").write_text("{not json")
    assert "not JSON" in validate(tmp_path)[0]
    (tmp_path / "index.json").write_text('{"format_version": 1, "format_version": 2}')  # JSON, but refused
    assert validate(tmp_path) == [f"{tmp_path}/index.json: the key 'format_version' is given twice in one object"]
    write_shards(tmp_path)
    rewrite_index(tmp_path, lambda index: index.pop("pad_id"))
    assert "keys missing: pad_id" in validate(tmp_path)[0]


@pytest.mark.parametrize("value", [5, "5", [0, 1], [{"a": 1}]])
def test_batch_rows_that_are_not_positive_counts_are_a_problem_named_not_a_traceback(tmp_path, value):
    write_shards(tmp_path)
    rewrite_index(tmp_path, lambda index: index["shards"][0].update(batch_rows=value))
    assert any("batch_rows must be a list of positive counts" in problem for problem in validate(tmp_path))


@pytest.mark.parametrize("key, value, words", [
    ("seq_len", 128 << 20, "seq_len 134217728 must be a positive multiple of 128 up to 4194304"),
    ("vocab_size", 1 << 30, "vocab_size 1073741824 must be a positive integer up to 16777216"),
    ("embedding_size", 1 << 40, "embedding_size 1099511627776 must be vocab_size rounded up to a multiple of 128"),
])
def test_sizes_that_would_size_an_allocation_are_bounded(tmp_path, key, value, words):
    # a loader's batch is seq_len tokens a row and a model's embedding vocab_size rows: a number from elsewhere
    # is checked before either is allocated (seq_len 128 x 2^20 once asked for 4 GiB a batch)
    write_shards(tmp_path)
    rewrite_index(tmp_path, lambda index: index.update({key: value}))
    assert any(words in problem for problem in validate(tmp_path)), validate(tmp_path)


def test_schema_must_be_the_shard_schema(tmp_path):
    write_shards(tmp_path)
    table = pa.table({"tokens": pa.array([[1] * 128], pa.list_(pa.int64())), "cu_seqlens": pa.array([[0, 128]])})
    with pa.OSFile(str(tmp_path / shard_name(0)), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    refresh_entry(tmp_path, 0)
    assert any("is not the shard schema" in p for p in validate(tmp_path))
    assert not SHARD_SCHEMA.equals(table.schema)


@pytest.mark.parametrize("size", [0, 1, (8 << 20) + 3])
def test_a_file_checksum_is_the_digest_of_its_bytes(tmp_path, size):
    path = tmp_path / "f.arrow"
    path.write_bytes(np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes())
    data = path.read_bytes()
    assert file_checksum(path) == xxhash.xxh3_128(data).hexdigest()


@pytest.mark.parametrize("refusal", ["checksum mismatch", "unknown checksum algorithm"])
def test_a_refused_shard_leaves_no_mapping_of_its_file(tmp_path, refusal):
    path = tmp_path / "f.arrow"
    path.write_bytes(bytes(range(256)) * 64)
    entry = ShardEntry("f.arrow", rows=1, tokens=128, real_tokens=128, bytes=path.stat().st_size, checksum="0" * 32)
    algorithm = "md5" if refusal.startswith("unknown") else "xxh3-128"
    with pytest.raises(ShardFileError, match=refusal) as refused:
        checked_shard_mapping(path, entry, algorithm)
    with open("/proc/self/maps") as maps:  # while the error (its traceback, its frames) is still held
        assert str(path) not in maps.read(), refused.value


def test_an_index_of_no_shards_is_noted_and_a_folder_named_json_is_a_folder(tmp_path, capsys):
    """Found by review (2026-12-07): an index listing no shards "agreed" without a word, which the loader
    refuses (it is what the shards job writes of an input without documents: valid, and said); a shards
    folder named web.json was read as a mixture."""
    folder = tmp_path / "web.json"
    write_shards(folder)
    assert main([str(folder)]) == 0 and "index and shards agree" in capsys.readouterr().out
    for shard in folder.glob("shard-*.arrow"):
        shard.unlink()
    rewrite_index(folder, lambda index: (index.update(shards=[]), index["totals"].update(
        shards=0, rows=0, tokens=0, real_tokens=0, bytes=0)))
    assert validate(folder) == [] and main([str(folder)]) == 0
    assert f"note: {folder / 'index.json'}: lists no shards (no document was packed)" in capsys.readouterr().out
    # found by the second review: a mixture with such a source agreed, and the loader refused it
    (tmp_path / "mixture.json").write_text(json.dumps(new_mixture({"web": ("web.json", 1.0, 0, 0)}).to_json()))
    assert validate_mixture(tmp_path / "mixture.json") == [
        "source 'web' (web.json): its index lists no shards: a mixture's source needs rows to give"]
    # and an index of no shards whose totals count some is not said to be valid beside its problems
    rewrite_index(folder, lambda index: (index["totals"].update(rows=8), index))
    assert main([str(folder)]) == 1 and "valid" not in capsys.readouterr().out


def test_a_shard_that_is_a_fifo_is_said_to_be_no_regular_file_not_missing(tmp_path):
    import os

    write_shards(tmp_path)
    (tmp_path / shard_name(0)).unlink()
    os.mkfifo(tmp_path / shard_name(0))
    assert validate(tmp_path)[0] == f"{shard_name(0)}: not a regular file (a FIFO, a device or a folder is not read)"
