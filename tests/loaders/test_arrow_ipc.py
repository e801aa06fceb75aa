"""The shard layout read by hand from Arrow IPC metadata: it finds the buffers pyarrow finds, leaves
every other layout to pyarrow, and refuses what is not an Arrow IPC file."""

import mmap

import numpy as np
import pyarrow as pa
import pytest

from loaders.arrow_ipc import read_region, shard_layout
from schemas.shards import SHARD_SCHEMA, shard_name
from tests.shard_fixtures import write_text_shards


def mapped(path):
    with open(path, "rb") as f:
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def decompressed(data, region, dtype):
    out = np.empty(region.size // np.dtype(dtype).itemsize, dtype)
    read_region(data, region, memoryview(out).cast("B"))
    return out


def test_the_buffers_found_by_hand_hold_what_pyarrow_reads(tmp_path):
    write_text_shards(tmp_path, parts=2)  # real text, record batches of ~64 KB: several per file
    for shard in range(2):
        path = tmp_path / shard_name(shard)
        batches = pa.ipc.open_file(pa.memory_map(str(path))).read_all().to_batches()
        layout = shard_layout(mapped(path))
        assert layout is not None and len(layout) == len(batches) > 1
        for ours, theirs in zip(layout, batches):
            assert ours.rows == theirs.num_rows
            for column, lists in zip((ours.tokens, ours.cu_seqlens), theirs.columns):
                values_type = np.uint32 if lists.type.value_type == pa.uint32() else np.int32
                assert column.values == len(lists.values)
                assert decompressed(mapped(path), column.offsets, np.int32).tolist() == lists.offsets.to_pylist()
                assert decompressed(mapped(path), column.data, values_type).tolist() == lists.values.to_pylist()


def write_table(path, table, **options):
    """One record batch per call of `table`'s rows (a slice of a larger batch may be written with the
    larger batch's buffers: also a layout left to pyarrow)."""
    with pa.ipc.new_file(str(path), table.schema, options=pa.ipc.IpcWriteOptions(**options)) as writer:
        writer.write_table(table)


def rows_table(schema=SHARD_SCHEMA, **extra):
    tokens = pa.array([[5, 6, 7], [8], [9, 10]], pa.list_(pa.uint32()))
    cu = pa.array([[0, 3], [0, 1], [0, 2]], pa.list_(pa.int32()))
    return pa.Table.from_arrays([tokens, cu, *extra.values()], schema=schema)


@pytest.mark.parametrize("table, options", [
    (rows_table(), {}),  # not compressed
    (rows_table(), {"compression": "lz4"}),
    (rows_table(pa.schema([*SHARD_SCHEMA, pa.field("extra", pa.int64())]), extra=pa.array([1, 2, 3])),
     {"compression": "zstd"}),
    (pa.Table.from_arrays([pa.array([[5], None, [9]], pa.list_(pa.uint32())),
                           pa.array([[0, 1], [0, 1], [0, 1]], pa.list_(pa.int32()))], names=["tokens", "cu_seqlens"]),
     {"compression": "zstd"}),  # a null row
])
def test_other_layouts_are_left_to_pyarrow(tmp_path, table, options):
    write_table(tmp_path / "other.arrow", table, **options)
    assert shard_layout(mapped(tmp_path / "other.arrow")) is None
    write_table(tmp_path / "ours.arrow", rows_table(), compression="zstd")  # the same rows as the job writes
    assert [batch.rows for batch in shard_layout(mapped(tmp_path / "ours.arrow"))] == [3]


@pytest.mark.parametrize("damage", [
    lambda _: b"not an arrow file" * 8,
    lambda data: data[:len(data) // 2] + data[-6:],  # magic at both ends, the footer length from elsewhere
    lambda data: data[:-10] + (len(data) * 2).to_bytes(4, "little") + data[-6:],  # a footer longer than the file
    lambda data: data[:-10] + (8).to_bytes(4, "little") + data[-6:],  # its offsets lead out of an 8-byte footer
])
def test_what_is_not_an_arrow_file_is_refused(tmp_path, damage):
    write_table(tmp_path / "ours.arrow", rows_table(), compression="zstd")
    (tmp_path / "bad.arrow").write_bytes(damage((tmp_path / "ours.arrow").read_bytes()))
    with pytest.raises(ValueError):
        shard_layout(mapped(tmp_path / "bad.arrow"))


def test_metadata_is_read_only_inside_its_own_bounds():
    from loaders.arrow_ipc import _FlatBuffer

    metadata = _FlatBuffer(memoryview(bytes(64)), 8, 24)  # the file goes on both sides
    assert metadata.scalar(8, 0, "<I", 7) == 7  # an empty vtable: the default
    for at in (4, 22, 24):
        with pytest.raises(ValueError, match="outside the metadata"):
            metadata.table(at, 0)
