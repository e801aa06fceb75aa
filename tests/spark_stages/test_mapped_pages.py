"""Pages of a read-only file mapping dropped from the process, the file still readable."""

import numpy as np
import pyarrow as pa

from spark_stages.mapped_pages import release_pages, whole_mapping


def resident_file_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssFile:"))


def test_a_mapped_file_leaves_the_resident_set_and_reads_the_same_after(tmp_path):
    values = np.random.default_rng(0).integers(0, 2**32, 12_000_000, dtype=np.uint32)  # 48 MB
    path = tmp_path / "encoded.arrow"
    with pa.ipc.new_file(str(path), pa.schema([("v", pa.uint32())])) as writer:
        writer.write_batch(pa.record_batch([pa.array(values)], names=["v"]))
    with pa.memory_map(str(path)) as source:
        mapping, table = whole_mapping(source), pa.ipc.open_file(source).read_all()
    column = table.column("v").chunk(0)
    before = resident_file_kb()
    assert int(np.asarray(column).sum(dtype=np.uint64)) == int(values.sum(dtype=np.uint64))  # every page read
    touched = resident_file_kb()
    assert touched - before > 40_000  # the file's pages are this process's now
    assert release_pages(mapping)
    assert touched - resident_file_kb() > 40_000
    assert np.array_equal(np.asarray(column), values)  # read back from the page cache


def test_an_empty_mapping_is_nothing_to_release(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    with pa.memory_map(str(path)) as source:
        assert release_pages(whole_mapping(source))
