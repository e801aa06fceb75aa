"""Parquet a task writes itself: whole files in place, or nothing but scratch the commit removes."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_stages import task_outputs
from spark_stages.outputs import SCRATCH
from spark_stages.task_outputs import TaskOutputs, fill_empty, prepare

SCHEMAS = {"docs": pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("n", pa.int64())]),
           "other": pa.schema([pa.field("id", pa.string())])}


def batch(ids, extra=True):
    columns = {"n": list(range(len(ids))), "id": ids}
    return pa.record_batch({**columns, "unused": ids} if extra else columns)


def test_a_task_writes_its_rows_in_order_in_one_file_per_output(tmp_path, monkeypatch):
    monkeypatch.setattr(task_outputs, "ROW_GROUP_BYTES", 64)  # several row groups, still one file
    prepare(tmp_path, SCHEMAS)
    outputs = TaskOutputs(tmp_path, SCHEMAS, partition=12)
    for i in range(5):
        outputs.write("docs", batch([f"{i}-{j}" for j in range(4)]))
        outputs.write("other", batch([]))
    assert not list((tmp_path / "docs").iterdir())  # nothing in place before close
    outputs.close()
    written = pq.ParquetFile(tmp_path / "docs" / "part-000012.parquet")
    assert written.metadata.num_row_groups > 1
    table = written.read()
    assert table.column("id").to_pylist() == [f"{i}-{j}" for i in range(5) for j in range(4)]
    assert table.schema.names == ["id", "n"] and all(field.nullable for field in table.schema)  # as Spark writes
    assert not list((tmp_path / "other").iterdir()) and not list((tmp_path / SCRATCH).iterdir())
    fill_empty(tmp_path, SCHEMAS)
    assert pq.read_table(tmp_path / "other").num_rows == 0
    assert pq.read_table(tmp_path / "other").schema.names == ["id"]
    assert [p.name for p in (tmp_path / "docs").iterdir()] == ["part-000012.parquet"]


def test_a_failed_task_leaves_nothing_in_place(tmp_path, monkeypatch):
    monkeypatch.setattr(task_outputs, "ROW_GROUP_BYTES", 1)  # its first rows already in a scratch file
    prepare(tmp_path, SCHEMAS)
    outputs = TaskOutputs(tmp_path, SCHEMAS, partition=0)
    outputs.write("docs", batch(["a"]))
    assert list((tmp_path / SCRATCH).iterdir())
    with pytest.raises(KeyError):
        outputs.write("docs", batch(["b"], extra=False).drop_columns(["id"]))  # a column missing
    outputs.abandon()
    assert not list((tmp_path / SCRATCH).iterdir()) and not list((tmp_path / "docs").iterdir())


def test_a_task_outliving_its_job_cannot_write_into_a_committed_output(tmp_path):
    prepare(tmp_path, SCHEMAS)
    late = TaskOutputs(tmp_path, SCHEMAS, partition=0)
    late.write("docs", batch(["a"]))
    for name in (SCRATCH, "docs", "other"):  # the commit moved the outputs away and removed scratch
        (tmp_path / name).rename(tmp_path.parent / f"{tmp_path.name}-{name}")
    with pytest.raises(FileNotFoundError):
        late.close()
    assert not (tmp_path / "docs").exists()
