"""Dedup transforms the Spark job calls on Arrow batches: document features and survivor selection."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from prep.dedup.lsh import LshParams, band_hashes, document_features, lsh_params
from prep.dedup.minhash import MinHashConfig
from prep.dedup.near_clusters import select_survivors


@dataclass(frozen=True)
class DedupConfig:
    threshold: float = 0.8  # Jaccard similarity of shingle sets at which two documents are duplicates
    minhash: MinHashConfig = field(default_factory=MinHashConfig)
    verify: bool = True  # keep an LSH candidate pair only if its estimated Jaccard reaches the threshold
    giant_bucket: int = 10_000  # buckets larger than this are logged and counted (boilerplate)

    def __post_init__(self):
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")

    @property
    def lsh(self) -> LshParams:
        return lsh_params(self.threshold, self.minhash.num_perm)


FEATURES_SCHEMA = pa.schema([
    ("row", pa.int64()),  # the document's position in the input order the job assigned
    ("id", pa.string()),  # carried along: the decisions name documents without going back to the text
    ("id_hash", pa.int64()),
    ("text_len", pa.int64()),
    ("exact_hash", pa.binary()),  # 16 bytes
    ("signature", pa.binary()),  # num_perm little-endian uint32
    ("shingles", pa.int64()),  # shingles hashed (for the stats)
    ("signature_seconds", pa.float64()),  # this document's share of its batch's signature time (for the stats)
])

# scope: documents are compared only within one scope (0 for all; a source's index to dedup sources apart)
BANDS_SCHEMA = pa.schema([("rank", pa.int64()), ("scope", pa.int32()), ("band", pa.int32()), ("bucket", pa.int64())])

SURVIVORS_SCHEMA = pa.schema([("rank", pa.int64()), ("near_kept", pa.bool_()), ("copy_of", pa.int64())])


def features_batch(batch: pa.RecordBatch, cfg: DedupConfig) -> pa.RecordBatch:
    """(row, id, text) in, FEATURES_SCHEMA out."""
    features = document_features(batch["id"].to_pylist(), batch["text"], cfg.minhash)
    return pa.RecordBatch.from_pydict({"row": batch["row"], "id": batch["id"], **features}, schema=FEATURES_SCHEMA)


def signature_array(column: pa.Array | pa.ChunkedArray, num_perm: int) -> np.ndarray:
    return fixed_width_values(column, np.uint32, num_perm)


def fixed_width_values(column: pa.Array | pa.ChunkedArray, dtype, width: int) -> np.ndarray:
    """A binary column whose every value is `width` items of `dtype` (signatures, hashes), as a read-only
    array [rows, width] over its data buffer: no Python object per value."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not len(array):
        return np.empty((0, width), dtype)
    nbytes = np.dtype(dtype).itemsize * width
    offset_type = np.dtype(np.int64 if pa.types.is_large_binary(array.type) else np.int32)
    offsets = np.frombuffer(array.buffers()[1], offset_type, len(array) + 1, array.offset * offset_type.itemsize)
    if array.null_count or np.any(np.diff(offsets) != nbytes):
        raise ValueError(f"a binary column of {len(array)} values that are not all {nbytes} bytes")
    return np.frombuffer(array.buffers()[2], dtype, len(array) * width, int(offsets[0])).reshape(-1, width)


def bands_batch(batch: pa.RecordBatch, params: LshParams, num_perm: int) -> pa.RecordBatch:
    """(rank, scope, signature) in, one row per (document, band) out; `params` from DedupConfig.lsh (on the
    driver: the executors need not import datasketch)."""
    keys = band_hashes(signature_array(batch["signature"], num_perm), params)
    ranks = np.asarray(batch["rank"].to_numpy(zero_copy_only=False))
    return pa.RecordBatch.from_pydict({
        "rank": np.repeat(ranks, params.bands),
        "scope": np.repeat(np.asarray(batch["scope"].to_numpy(zero_copy_only=False), np.int32), params.bands),
        "band": np.tile(np.arange(params.bands, dtype=np.int32), len(ranks)),
        "bucket": keys.reshape(-1),
    }, schema=BANDS_SCHEMA)


def verify_batch(batch: pa.RecordBatch, cfg: DedupConfig) -> pa.RecordBatch:
    """(u, v, sig_u, sig_v) in, (u, v, similarity) out."""
    n = cfg.minhash.num_perm
    a, b = signature_array(batch["sig_u"], n), signature_array(batch["sig_v"], n)
    return pa.RecordBatch.from_pydict({"u": batch["u"], "v": batch["v"], "similarity": (a == b).mean(axis=1)})


def survivors_batches(batches: Iterable[pa.RecordBatch], cfg: DedupConfig) -> Iterator[pa.RecordBatch]:
    """(component, rank, signature) batches, sorted by component then rank, in; SURVIVORS_SCHEMA out.

    A partition's components in one pass (a component may span batches): a grouped UDF would cost a
    Python call and an Arrow stream per component, ~0.4 ms each, more than deciding most of them."""
    pending: list[pa.RecordBatch] = []  # the rows of the last component seen, which the next batch may continue
    for batch in batches:
        if batch.num_rows == 0:
            continue
        components = batch["component"].to_numpy()
        last = int(np.searchsorted(components, components[-1]))  # where the batch's last component starts
        if last or (pending and pending[0]["component"][0].as_py() != components[0]):
            yield _survivors(pa.Table.from_batches(pending + [batch.slice(0, last)]), cfg)  # each row once
            pending = []
        pending.append(batch.slice(last))
    if pending:
        yield _survivors(pa.Table.from_batches(pending), cfg)


def _survivors(table: pa.Table, cfg: DedupConfig) -> pa.RecordBatch:
    components, ranks = table["component"].to_numpy(), table["rank"].to_numpy()
    signatures = signature_array(table["signature"].combine_chunks(), cfg.minhash.num_perm)
    near_kept, copy_of = np.empty(len(ranks), bool), np.empty(len(ranks), np.int64)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(components)) + 1, [len(ranks)]])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        kept, copies = select_survivors(signatures[lo:hi], cfg.threshold)
        near_kept[lo:hi] = kept
        copy_of[lo:hi] = np.where(copies >= 0, ranks[lo:hi][copies], -1)
    return pa.RecordBatch.from_arrays([pa.array(ranks), pa.array(near_kept), pa.array(copy_of)],
                                      schema=SURVIVORS_SCHEMA)
