"""Writing packed rows as zstd Arrow IPC files that appear whole or not at all.

Rows are buffered into record batches of about `batch_bytes` (uncompressed) and a file is closed once
it passes `shard_mb` MiB on disk. Each file is written as NAME.<unique>.tmp and renamed to NAME when
complete, so a reader (or a rerun after a killed task) never sees a partial file under a real name,
and two attempts at the same task (a retry beside a straggler of a lost executor) never write into
one file: each renames its own complete copy, and the copies are equal.
"""

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from schemas.index import ShardEntry
from schemas.shards import SHARD_SCHEMA, file_checksum

MIN_SHARD_MB = 1 / 64  # 16 KiB: a shard holds a record batch or more


@dataclass(frozen=True)
class ShardConfig:
    zstd_level: int = 3  # set explicitly: Arrow's own default is 1
    batch_bytes: int = 4 << 20  # uncompressed bytes per record batch (1-8 MB reads well)
    shard_mb: float = 128  # a file is closed past this many MiB on disk

    def __post_init__(self):
        if not 1 <= self.zstd_level <= 22 or self.shard_mb <= 0 or self.batch_bytes < 1:
            raise ValueError(f"zstd_level must be in 1..22, shard_mb and batch_bytes positive, got {self.zstd_level}, "
                             f"{self.shard_mb}, {self.batch_bytes}")
        if self.shard_mb < MIN_SHARD_MB:  # 2**-20 wrote a shard a row: hours of it on a 34 MB corpus
            raise ValueError(f"shard_mb must be at least {MIN_SHARD_MB:g} (16 KiB), got {self.shard_mb}")

    @property
    def shard_bytes(self) -> int:
        return int(self.shard_mb * 2**20)


def _list_array(rows: list[np.ndarray], value_type: pa.DataType) -> pa.ListArray:
    offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    values = np.concatenate(rows) if rows else np.zeros(0, dtype=value_type.to_pandas_dtype())
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type=value_type))


class ShardWriter:
    """add() rows, close() to get one entry per file written: file, rows, tokens, real_tokens, bytes, checksum,
    batch_rows (rows in each Arrow record batch, in order: lets a reader decompress one batch alone)."""

    def __init__(self, folder: Path, prefix: str, cfg: ShardConfig):
        self.folder, self.prefix, self.cfg = Path(folder), prefix, cfg
        self.options = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", compression_level=cfg.zstd_level))
        self.files: list[dict] = []  # the entries of the files so far, as they grow
        self._writer = self._sink = self._tmp = None
        self._tokens, self._cu = [], []
        self._pending_bytes = 0

    def add(self, tokens: np.ndarray, cu_seqlens: np.ndarray) -> None:
        self._tokens.append(tokens)
        self._cu.append(cu_seqlens)
        self._pending_bytes += tokens.nbytes + cu_seqlens.nbytes
        if self._pending_bytes >= self.cfg.batch_bytes:
            self._flush()

    def _flush(self) -> None:
        if not self._tokens:
            return
        if self._writer is None:
            name = f"{self.prefix}-{len(self.files):04d}.arrow"
            self._tmp = self.folder / f"{name}.{uuid.uuid4().hex}.tmp"
            self._sink = pa.OSFile(str(self._tmp), "wb")
            self._writer = pa.ipc.new_file(self._sink, SHARD_SCHEMA, options=self.options)
            self.files.append({"file": name, "rows": 0, "tokens": 0, "real_tokens": 0, "batch_rows": []})
        batch = pa.record_batch([_list_array(self._tokens, pa.uint32()), _list_array(self._cu, pa.int32())],
                                schema=SHARD_SCHEMA)
        self._writer.write_batch(batch)
        entry = self.files[-1]
        entry["rows"] += len(self._tokens)
        entry["batch_rows"].append(len(self._tokens))
        entry["tokens"] += sum(len(t) for t in self._tokens)
        entry["real_tokens"] += sum(int(c[-1]) for c in self._cu)
        self._tokens, self._cu, self._pending_bytes = [], [], 0
        if self._sink.tell() >= self.cfg.shard_bytes:
            self._finish_file()

    def _finish_file(self) -> None:
        self._writer.close()
        self._sink.close()
        entry = self.files[-1]
        entry["bytes"], entry["checksum"] = self._tmp.stat().st_size, file_checksum(self._tmp)
        os.replace(self._tmp, self.folder / entry["file"])
        self._writer = self._sink = None

    def close(self) -> list[ShardEntry]:
        self._flush()
        if self._writer is not None:
            self._finish_file()
        return [ShardEntry(**{**f, "batch_rows": tuple(f["batch_rows"])}) for f in self.files]
