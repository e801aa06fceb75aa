"""The shard writer: files appear whole or not at all, batches and files roll at their sizes, and
plain pyarrow, polars and duckdb read the result."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

from prep.shard_writer import ShardConfig, ShardWriter
from schemas.shards import SHARD_SCHEMA, file_checksum
from tests.conftest import REPO


def rows(n, length=256, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield rng.integers(0, 50_000, length, dtype=np.uint32), np.array([0, length // 2, length], dtype=np.int32)


def test_a_file_is_visible_only_once_complete(tmp_path):
    writer = ShardWriter(tmp_path, "group-00000", ShardConfig(batch_bytes=64 << 10))
    for tokens, cu in rows(200):  # several batches written, file still open
        writer.add(tokens, cu)
    [partial] = [p.name for p in tmp_path.iterdir()]
    assert partial.startswith("group-00000-0000.arrow.") and partial.endswith(".tmp")
    [entry] = writer.close()
    assert [p.name for p in tmp_path.iterdir()] == ["group-00000-0000.arrow"]
    path = tmp_path / entry.file
    assert entry.bytes == path.stat().st_size and entry.checksum == file_checksum(path)
    assert entry.rows == 200 and entry.tokens == 200 * 256 and entry.real_tokens == 200 * 256


def test_two_attempts_at_one_group_write_their_own_partial_files(tmp_path):
    first, second = (ShardWriter(tmp_path, "group-00000", ShardConfig(batch_bytes=64 << 10)) for _ in range(2))
    for tokens, cu in rows(200):  # a retried task beside a straggler of a lost executor, interleaved
        first.add(tokens, cu)
        second.add(tokens, cu)
    assert len(list(tmp_path.iterdir())) == 2
    assert first.close() == second.close()
    [path] = tmp_path.iterdir()
    assert path.name == "group-00000-0000.arrow" and file_checksum(path) == first.files[0]["checksum"]


def test_a_killed_writer_leaves_no_file_under_a_real_name(tmp_path):
    script = ("import sys, time, numpy as np\nfrom prep.shard_writer import ShardConfig, ShardWriter\n"
              "w = ShardWriter(sys.argv[1], 'g', ShardConfig(batch_bytes=1 << 12))\n"
              "for i in range(10**9):\n"
              "    w.add(np.arange(256, dtype=np.uint32), np.array([0, 256], dtype=np.int32))\n"
              "    if i == 100: print('writing', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    names = [p.name for p in tmp_path.iterdir()]
    assert names and all(name.endswith(".tmp") for name in names)


def test_batches_and_files_roll_at_their_sizes_and_every_reader_reads_them(tmp_path):
    import duckdb
    import polars
    import pyarrow.dataset

    cfg = ShardConfig(batch_bytes=32 << 10, shard_mb=200 / 1024)
    writer = ShardWriter(tmp_path, "g", cfg)
    written = list(rows(600, seed=1))
    for tokens, cu in written:
        writer.add(tokens, cu)
    entries = writer.close()
    assert len(entries) > 1 and sum(e.rows for e in entries) == 600
    first = tmp_path / entries[0].file
    with pa.memory_map(str(first)) as source:
        reader = pa.ipc.open_file(source)
        assert reader.schema.equals(SHARD_SCHEMA) and reader.num_record_batches > 1
        table = reader.read_all()
    assert np.array_equal(table.column("tokens")[0].values.to_numpy(), written[0][0])
    frame = polars.read_ipc(first)
    assert frame["tokens"][0].to_list() == written[0][0].tolist()
    shard = pyarrow.dataset.dataset(str(first), format="ipc")  # noqa: F841 (duckdb finds it by name)
    count = duckdb.sql("select count(*), sum(len(tokens)) from shard").fetchone()
    assert count == (table.num_rows, table.num_rows * 256)
