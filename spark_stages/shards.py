"""The shards stage: encode documents, pack them into rows and write zstd Arrow shards with an index.

Writes SHARDS/shard-00000.arrow, ... and SHARDS/index.json (last; see schemas/shards.py), and
SHARDS/quarantine/ when some input records were not documents. Check a result with
`python -m schemas.validate SHARDS`.

Determinism: documents are dealt into packing groups by a hash of their id, the number of groups
coming from the token count (about one shard file per group); inside a group they are sorted by id,
packed by best-fit decreasing and written by one task. Nothing depends on partitions or cores, so
the same input and settings give byte-identical shards and index anywhere.
"""

import logging
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from prep.packing import PackConfig, materialize, pack
from prep.shard_writer import ShardConfig, ShardWriter
from prep.tokenizer.encode import TokenizerFile, encode_flat
from schemas.shards import INDEX_FILE, new_index, shard_name
from spark_stages.ingest import load_documents, parsed_once
from spark_stages.outputs import commit, content_checksum, staging_dir
from spark_stages.runner import Stage
from spark_stages.session import session_conf

log = logging.getLogger(__name__)

ENCODED_SCHEMA = "id string, tokens binary"
WRITTEN_SCHEMA = ("grp int, file string, rows long, tokens long, real_tokens long, bytes long, checksum string, "
                  "batch_rows array<long>, documents long")
# Text bytes per byte of shard on disk (about 4.5 bytes of text per token, 1.4 bytes per token on disk):
# sizes the packing groups from the text alone, before anything is encoded.
TEXT_PER_SHARD_BYTE = 3
TASKS_PER_CORE = 4


@dataclass(frozen=True)
class Config(ShardConfig):
    """How shard files are written (prep/shard_writer.py) and rows packed (prep/packing.py)."""
    tokenizer: str | None = None  # the tokenizer.json that encodes the documents (required)
    pack: PackConfig = field(default_factory=PackConfig)


def tokenizer_file(cfg: Config) -> TokenizerFile:
    if not cfg.tokenizer:
        raise ValueError("a tokenizer is required: --tokenizer FILE (or tokenizer: in the --config file)")
    return TokenizerFile.read(cfg.tokenizer)


def check(cfg: Config, _sources) -> None:
    tokenizer_file(cfg)


def encode(docs, tokenizer: TokenizerFile, spark):
    """(id, tokens as little-endian uint32 bytes, length) per document, encoded in the executors."""
    shared = spark.sparkContext.broadcast(tokenizer)

    def run(batches):
        for batch in batches:
            tokens, offsets = encode_flat(shared.value, batch.column("text"))
            binary = pa.Array.from_buffers(pa.binary(), len(offsets) - 1,  # each document's uint32 ids as bytes
                                           [None, pa.py_buffer((4 * offsets).astype(np.int32)), pa.py_buffer(tokens)])
            yield pa.RecordBatch.from_arrays([batch.column("id"), binary], names=["id", "tokens"])

    return docs.select("id", "text").mapInArrow(run, ENCODED_SCHEMA)


def pack_and_write(table: pa.Table, folder: str, cfg: Config, pad_id: int) -> pa.Table:
    """One packing group: sort by id (then tokens, for equal ids), pack, write its files."""
    group = table.column("grp")[0].as_py()
    in_place = [doc for chunk in table.column("tokens").chunks for doc in _token_views(chunk)]  # no copy
    order = pc.sort_indices(table, [("id", "ascending"), ("tokens", "ascending")]).to_numpy()
    docs = [in_place[i] for i in order.tolist()]
    rows = pack([len(d) for d in docs], cfg.pack)
    writer = ShardWriter(Path(folder), f"group-{group:05d}", cfg)
    for tokens, cu in zip(*materialize(rows, docs, pad_id)):
        writer.add(tokens, cu)
    files = writer.close()
    return pa.Table.from_pylist([{"grp": group, **f, "documents": len(docs) if i == 0 else 0}
                                 for i, f in enumerate(files)],
                                schema=pa.schema([("grp", pa.int32()), ("file", pa.string()), ("rows", pa.int64()),
                                                  ("tokens", pa.int64()), ("real_tokens", pa.int64()),
                                                  ("bytes", pa.int64()), ("checksum", pa.string()),
                                                  ("batch_rows", pa.list_(pa.int64())), ("documents", pa.int64())]))


def _token_views(chunk: pa.BinaryArray) -> list[np.ndarray]:
    """Each document's uint32 ids: views of the chunk's buffer."""
    offsets = np.frombuffer(chunk.buffers()[1], np.int32)[chunk.offset:chunk.offset + len(chunk) + 1] // 4
    values = np.frombuffer(chunk.buffers()[2], np.uint32) if chunk.buffers()[2] else np.zeros(0, np.uint32)
    return [values[lo:hi] for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def run(spark, files, cfg: Config, out: str) -> dict:
    """Encodes, packs and writes the shards; returns the index (also SHARDS/index.json)."""
    # Several read tasks per core: the encoding is most of the work, and a few large tasks leave cores
    # idle at the end (partitions never decide the output here: groups do).
    tasks = TASKS_PER_CORE * spark.sparkContext.defaultParallelism
    with session_conf(spark, {"spark.sql.files.minPartitionNum": str(tasks)}), parsed_once() as keep:
        return _run(spark, *load_documents(spark, files, keep), cfg, out)  # sized, encoded, quarantine counted


def _run(spark, docs, quarantine, cfg: Config, out: str) -> dict:
    from pyspark.sql import functions as F

    tokenizer = tokenizer_file(cfg)
    # About one shard file per group, sized from the text (one cheap pass, no Python) so that the
    # documents are encoded once, on their way to their group.
    text_bytes = docs.agg(F.sum(F.octet_length("text"))).first()[0] or 0
    groups = max(1, math.ceil(text_bytes / (TEXT_PER_SHARD_BYTE * cfg.shard_bytes)))
    log.info("%d bytes of text: %d packing groups", text_bytes, groups)
    staging = staging_dir(out)
    folder = str(staging)
    written = (encode(docs, tokenizer, spark).withColumn("grp", F.pmod(F.xxhash64("id"), F.lit(groups)).cast("int"))
               .groupBy("grp").applyInArrow(lambda t: pack_and_write(t, folder, cfg, tokenizer.pad_id),
                                            WRITTEN_SCHEMA)
               .collect())
    documents = sum(entry.documents for entry in written)
    shards = []
    for entry in sorted(written, key=lambda r: (r.grp, r.file)):
        name = shard_name(len(shards))
        os.replace(staging / entry.file, staging / name)
        shards.append({"file": name, "rows": entry.rows, "tokens": entry.tokens, "real_tokens": entry.real_tokens,
                       "bytes": entry.bytes, "checksum": entry.checksum, "batch_rows": list(entry.batch_rows)})
        log.info("%s: %d rows, %d bytes", name, entry.rows, entry.bytes)
    for leftover in staging.glob("group-*"):  # of task attempts that failed, or lost the race to a retry
        leftover.unlink()
    quarantined = quarantine.count()
    extra = {}
    if quarantined:
        quarantine.write.parquet(str(staging / "quarantine"))
        extra["quarantine_checksum"] = content_checksum(spark, staging / "quarantine")
    index = new_index(shards, tokenizer_sha256=tokenizer.sha256, vocab_size=tokenizer.vocab_size,
                      seq_len=cfg.pack.seq_len, pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id,
                      eos_id=tokenizer.eos_id, compression_level=cfg.zstd_level, documents=documents,
                      quarantined=quarantined)
    index.update(extra)
    (Path(out) / INDEX_FILE).unlink(missing_ok=True)  # first: no index may point at missing shards
    for stale in Path(out).glob("shard-*.arrow"):  # a previous run's, if any
        stale.unlink()
    shutil.rmtree(Path(out) / "quarantine", ignore_errors=True)
    commit(staging, out, ["quarantine"] if quarantined else [], index, marker=INDEX_FILE)
    return index


def summary(index: dict) -> str:
    t = index["totals"]
    return (f"{t['documents']} documents -> {t['rows']} rows of at most {index['seq_len']} tokens in {t['shards']} "
            f"shards: {t['real_tokens']} real tokens, padding waste {t['padding_waste']:.2%}, "
            f"{t['bytes_per_token']:.3f} bytes/token on disk, {t['quarantined']} quarantined")


STAGE = Stage("shards", "Encode documents, pack them into rows and write zstd Arrow shards with an index.", Config,
              run, summary, modules=("spark_stages.shards",), check=check)
