"""Parquet outputs a Python task writes itself, one file per output per task, in a stage's staging folder.

Spark's writer would take the task's Arrow batches into the JVM as rows and out again to Parquet (and a
stage with several outputs would keep its result on disk to filter it once per output): at 627 MB of
text that was a third of the cleaning job's time. A task writes `OUT/_staging/NAME/part-NNNNNN.parquet`
(NNNNNN its partition, so the files come in partition order; spark_stages/outputs.py renames them
part-00000.parquet, ... at the commit) and nothing when it has no rows for NAME.

Whole or not at all: a task writes into a file of its attempt's own in `_scratch/` and renames it into
place when it is complete. Two attempts of a task (a retry, a speculative copy) write the same rows, so
whichever rename comes last leaves the same file; a killed attempt leaves only its scratch file, which
the commit removes with `_scratch/`. The staging folder is on a file system every executor mounts at the
same path (as the shards job's).
"""

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from spark_stages.outputs import SCRATCH

# Rows a writer holds before writing a row group: few large row groups, not one per Arrow batch (a
# reader's pieces are row groups), in bounded memory.
ROW_GROUP_BYTES = 16 << 20


def nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema])


def part_name(partition: int) -> str:
    return f"part-{partition:06d}.parquet"


class TaskOutputs:
    """The files one task writes: `outputs` maps an output's name to its schema. Every column is written
    nullable, as Spark's writer writes them."""

    def __init__(self, staging: Path, outputs: dict[str, pa.Schema], partition: int):
        self._staging, self._partition = staging, partition
        self._schemas = {name: nullable(schema) for name, schema in outputs.items()}
        self._pending: dict[str, list[pa.RecordBatch]] = {name: [] for name in outputs}
        self._writers: dict[str, tuple[Path, pq.ParquetWriter]] = {}

    def write(self, name: str, batch: pa.RecordBatch) -> None:
        """Rows of output `name`: its schema's columns, taken by name."""
        if not batch.num_rows:
            return
        pending = self._pending[name]
        pending.append(batch.select(self._schemas[name].names).cast(self._schemas[name]))
        if sum(b.nbytes for b in pending) >= ROW_GROUP_BYTES:
            self._flush(name)

    def _flush(self, name: str) -> None:
        pending = self._pending[name]
        if not pending:
            return
        if name not in self._writers:
            scratch = self._staging / SCRATCH / f"{name}-{self._partition}-{uuid.uuid4().hex}.parquet"
            self._writers[name] = scratch, pq.ParquetWriter(scratch, self._schemas[name])
        self._writers[name][1].write_table(pa.Table.from_batches(pending))
        pending.clear()

    def close(self) -> None:
        """Every output written in place; call once the task's last batch is written."""
        for name in self._schemas:
            self._flush(name)
        for name, (scratch, writer) in self._writers.items():
            writer.close()
            os.replace(scratch, self._staging / name / part_name(self._partition))

    def abandon(self) -> None:
        """A task that failed: its scratch files closed and removed (a retry writes its own)."""
        for scratch, writer in self._writers.values():
            writer.close()
            scratch.unlink(missing_ok=True)


def prepare(staging: Path, outputs: dict[str, pa.Schema]) -> None:
    """The folders the tasks write into, made before they run: a task never makes one, so an attempt that
    outlives its job (a lost executor's) fails instead of writing into a committed output."""
    for name in (SCRATCH, *outputs):
        (staging / name).mkdir(exist_ok=True)


def fill_empty(staging: Path, outputs: dict[str, pa.Schema]) -> None:
    """An output no task wrote a row of gets one file without rows, with its schema (as Spark's writer
    leaves it), so that readers find the columns."""
    for name, schema in outputs.items():
        if not any((staging / name).glob("part-*.parquet")):
            pq.write_table(nullable(schema).empty_table(), staging / name / part_name(0))
