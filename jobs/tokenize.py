"""The tokenize job: encode documents, pack them into rows and write zstd Arrow shards with an index.

    spark-submit jobs/tokenize.py --input IN --tokenizer FILE --output SHARDS [--seq-len 4096]
        [--zstd-level 3] [--shard-mb 128] [--conf key=value ...]
    python -m jobs.tokenize ...

Writes SHARDS/shard-00000.arrow, ... and SHARDS/index.json (last; see schemas/shards.py), and
SHARDS/quarantine/ when some input records were not documents. Check a result with
`python -m schemas.validate SHARDS`.

Determinism: documents are dealt into packing groups by a hash of their id, the number of groups
coming from the token count (about one shard file per group); inside a group they are sorted by id,
packed by best-fit decreasing and written by one task. Nothing depends on partitions or cores, so
the same input and settings give byte-identical shards and index anywhere.
"""

import os
import sys

if __package__ in (None, ""):  # run as a file by spark-submit: put the project root in place of jobs/ on the
    # path, before anything imports the standard library's tokenize (jobs/tokenize.py would shadow it)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import argparse
import math
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from jobs.ingest import load_documents
from jobs.outputs import commit, content_checksum, staging_dir
from jobs.spark_session import spark_for_job
from prep.encode import TokenizerFile, encode_documents
from prep.inputs import InputError, expand_inputs
from prep.packing import PackConfig, materialize, pack
from prep.shard_writer import ShardConfig, ShardWriter
from schemas.shards import INDEX_FILE, new_index, shard_name

ENCODED_SCHEMA = "id string, tokens binary, length long"
WRITTEN_SCHEMA = ("grp int, file string, rows long, tokens long, real_tokens long, bytes long, checksum string, "
                  "batch_rows array<long>")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="jobs.tokenize", description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, help="files, directories or globs, comma-separated")
    parser.add_argument("--tokenizer", required=True, help="a tokenizer.json (jobs.train_tokenizer's)")
    parser.add_argument("--output", required=True, help="the shards folder")
    parser.add_argument("--seq-len", type=int, default=4096, help="tokens per row at most, a multiple of 128")
    parser.add_argument("--zstd-level", type=int, default=3, help="zstd level of the shards (default 3)")
    parser.add_argument("--shard-mb", type=int, default=128, help="about this many MB per shard file (default 128)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting (repeatable)")
    args = parser.parse_args(argv)
    if not 1 <= args.zstd_level <= 22 or args.shard_mb < 1:
        parser.error("--zstd-level must be in 1..22 and --shard-mb positive")
    return args


def encode(docs, tokenizer: TokenizerFile, spark):
    """(id, tokens as little-endian uint32 bytes, length) per document, encoded in the executors."""
    shared = spark.sparkContext.broadcast(tokenizer)

    def run(batches):
        for batch in batches:
            arrays = encode_documents(shared.value, batch.column("text").to_pylist())
            yield pa.RecordBatch.from_pydict({
                "id": batch.column("id"), "tokens": [a.tobytes() for a in arrays],
                "length": [len(a) for a in arrays]})

    return docs.select("id", "text").mapInArrow(run, ENCODED_SCHEMA)


def pack_and_write(table: pa.Table, folder: str, cfg: PackConfig, shard_cfg: ShardConfig, pad_id: int) -> pa.Table:
    """One packing group: sort by id (then tokens, for equal ids), pack, write its files."""
    group = table.column("grp")[0].as_py()
    table = table.sort_by([("id", "ascending"), ("tokens", "ascending")])
    docs = [np.frombuffer(b, dtype=np.uint32) for b in table.column("tokens").to_pylist()]
    rows = pack([len(d) for d in docs], cfg)
    writer = ShardWriter(Path(folder), f"group-{group:05d}", shard_cfg)
    for tokens, cu in zip(*materialize(rows, docs, pad_id)):
        writer.add(tokens, cu)
    files = writer.close()
    return pa.Table.from_pylist([{"grp": group, **f} for f in files],
                                schema=pa.schema([("grp", pa.int32()), ("file", pa.string()), ("rows", pa.int64()),
                                                  ("tokens", pa.int64()), ("real_tokens", pa.int64()),
                                                  ("bytes", pa.int64()), ("checksum", pa.string()),
                                                  ("batch_rows", pa.list_(pa.int64()))]))


def run_tokenize(spark, files, tokenizer: TokenizerFile, out: str, cfg: PackConfig, shard_cfg: ShardConfig) -> dict:
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    docs, quarantine = load_documents(spark, files)
    encoded = encode(docs, tokenizer, spark).persist(StorageLevel.MEMORY_AND_DISK)
    documents, total_tokens = encoded.agg(F.count("*"), F.sum("length")).first()
    total_tokens = total_tokens or 0
    # About one shard file per group: at ~1 byte per token on disk, shard_bytes tokens per group.
    groups = max(1, math.ceil(total_tokens / shard_cfg.shard_bytes))
    staging = staging_dir(out)
    folder = str(staging)
    written = (encoded.withColumn("grp", F.pmod(F.xxhash64("id"), F.lit(groups)).cast("int"))
               .groupBy("grp").applyInArrow(lambda t: pack_and_write(t, folder, cfg, shard_cfg, tokenizer.pad_id),
                                            WRITTEN_SCHEMA)
               .collect())
    encoded.unpersist()
    shards = []
    for entry in sorted(written, key=lambda r: (r.grp, r.file)):
        name = shard_name(len(shards))
        os.replace(staging / entry.file, staging / name)
        shards.append({"file": name, "rows": entry.rows, "tokens": entry.tokens, "real_tokens": entry.real_tokens,
                       "bytes": entry.bytes, "checksum": entry.checksum, "batch_rows": list(entry.batch_rows)})
    for leftover in staging.glob("group-*"):  # of task attempts that failed, or lost the race to a retry
        leftover.unlink()
    quarantined = quarantine.count()
    extra = {}
    if quarantined:
        quarantine.write.parquet(str(staging / "quarantine"))
        extra["quarantine_checksum"] = content_checksum(spark, staging / "quarantine")
    index = new_index(shards, tokenizer_sha256=tokenizer.sha256, vocab_size=tokenizer.vocab_size, seq_len=cfg.seq_len,
                      pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id,
                      compression_level=shard_cfg.zstd_level, documents=documents, quarantined=quarantined)
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


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        cfg = PackConfig(seq_len=args.seq_len)
        tokenizer = TokenizerFile.read(args.tokenizer)
        files = expand_inputs(args.input)
    except (InputError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    spark = spark_for_job("tokenmill-tokenize", args.conf, ("jobs.tokenize",))
    started = time.time()
    index = run_tokenize(spark, files, tokenizer, args.output, cfg,
                         ShardConfig(zstd_level=args.zstd_level, shard_bytes=args.shard_mb << 20))
    print(f"{summary(index)} ({time.time() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
