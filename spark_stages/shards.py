"""The shards stage: encode documents, pack them into rows and write zstd Arrow shards with an index.

Writes SHARDS/shard-00000.arrow, ... and SHARDS/index.json (last; see schemas/shards.py), and
SHARDS/quarantine/ when some input records were not documents. With `heldout_share`, the documents
whose id hashes into that share of the hash space go to SHARDS/heldout/ instead, a shards folder of
its own (chosen by the id, not by position: the end of an input is not a sample of it). Check a result
with `python -m schemas.validate SHARDS`.

Two Spark jobs, no shuffle. The first encodes: each task reads its documents (a tokenmill stage's
Parquet output with pyarrow, straight from the files; other input through the ingestion readers), writes
their tokens to one uncompressed Arrow file in the staging folder (OUT/_staging/_scratch/, which every
executor reaches: the shards are written there too), each record batch sorted by a 64-bit hash of the
id, and returns its name and text bytes. The driver sizes the packing groups from the text bytes (about
one shard file per group); a group is a range of the hash, hence a slice of each record batch, read
memory-mapped by the group's task in the second job, which sorts it by id, packs it by best-fit
decreasing and writes its shard files. The tokens cross from encoder to packer as they were encoded, not
as Spark rows through a shuffle.

Determinism: nothing depends on partitions or cores (groups come from the total text bytes and each
document's id hash), so the same input and settings give byte-identical shards and index anywhere.
A retried task writes a file of its own; only the files of the attempts Spark kept are read.
"""

import dataclasses
import logging
import math
import os
import uuid
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from prep.ingest.inputs import InputError, Sources, all_files, name_problem
from prep.packing import PackConfig, materialize, pack
from prep.shard_writer import ShardConfig, ShardWriter
from prep.tokenizer.encode import TokenizerFile, encode_flat
from schemas.index import INDEX_FILE, ShardEntry, new_index
from schemas.mixture import MAX_SOURCES, MIXTURE_FILE, new_mixture, parse_weights, written_weights
from schemas.shards import shard_name
from spark_stages.ingest import (
    default_partitions,
    document_parquet,
    load_documents,
    parquet_documents,
    parquet_pieces,
    spread,
)
from spark_stages.mapped_pages import release_pages, whole_mapping
from spark_stages.outputs import (
    SCRATCH,
    claim_folder,
    commit,
    content_checksum,
    record_written,
    replace_layout,
    staging_dir,
    write_json,
)
from spark_stages.persisted import persisted
from spark_stages.runner import Stage
from spark_stages.session import column as quoted
from spark_stages.session import hashable, spark_schema

log = logging.getLogger(__name__)

WRITTEN_SCHEMA = pa.schema([("grp", pa.int32()), ("file", pa.string()), ("rows", pa.int64()), ("tokens", pa.int64()),
                            ("real_tokens", pa.int64()), ("bytes", pa.int64()), ("checksum", pa.string()),
                            ("batch_rows", pa.list_(pa.int64())), ("documents", pa.int64())])
# Text bytes per byte of shard on disk (about 4.5 bytes of text per token, 1.4 bytes per token on disk):
# sizes the packing groups from the text the encoding tasks counted.
TEXT_PER_SHARD_BYTE = 3
MAX_GROUP_DOCUMENTS = 1_000_000  # a packing task holds its group's documents (~400 bytes each past their tokens)
QUARANTINE_FILE_RECORDS = 1_000_000  # records of broken input in one quarantine file (one sorting task each)
MAX_SHARDS = 100_000  # shards one index lists at most (schemas/index.py: 64 MiB, a few hundred bytes each)
TASKS_PER_CORE = 4


@dataclass(frozen=True)
class Config(ShardConfig):
    """How shard files are written (prep/shard_writer.py) and rows packed (prep/packing.py)."""
    tokenizer: str | None = None  # the tokenizer.json that encodes the documents (required)
    # documents (chosen by a hash of the id) written to SHARDS/heldout/ instead, for held-out loss
    heldout_share: float = 0.0
    pack: PackConfig = field(default_factory=PackConfig)
    # a column of the documents (bucket_NAME, label_NAME of the classifiers): a shards folder per value,
    # SHARDS/VALUE/ (bN for a number N), and SHARDS/mixture.json naming them, for the loader to mix
    split_by: str = ""

    def __post_init__(self):
        super().__post_init__()
        if not 0 <= self.heldout_share < 1:
            raise ValueError(f"heldout_share must be in [0, 1), got {self.heldout_share}")


@dataclass(frozen=True)
class JobConfig(Config):
    """The shards job's settings (the pipeline's shards section, and the weights of a split)."""
    weights: str = ""  # with split_by: NAME=WEIGHT,... each folder's weight in mixture.json (default: its rows)

    def __post_init__(self):
        super().__post_init__()
        parse_weights(self.weights)


HELDOUT = "heldout"
PENDING_INDEX = INDEX_FILE + ".pending"  # the training shards' index, until heldout/ is complete
PARTS = ("all", "train", HELDOUT)


def in_part(keys: np.ndarray, part: str, share: float) -> np.ndarray | None:
    """Which documents of id hashes `keys` (id_keys) belong to `part`; None for all of them."""
    if part == "all":
        return None
    heldout = keys < np.uint64(min(int(share * 2**64), 2**64 - 1))
    return heldout if part == HELDOUT else ~heldout


def tokenizer_file(cfg: Config) -> TokenizerFile:
    if not cfg.tokenizer:
        raise ValueError("a tokenizer is required: --tokenizer FILE (or tokenizer: in the --config file)")
    return TokenizerFile.read(cfg.tokenizer)


def check(cfg: Config, _sources) -> None:
    tokenizer_file(cfg)
    if getattr(cfg, "weights", "") and not cfg.split_by:  # written nowhere: a job that took them and did nothing
        raise ValueError("--weights weighs the folders of --split-by: give --split-by COLUMN (named sources are "
                         "weighted by the pipeline's --weights)")


def encode(docs, tokenizer: TokenizerFile, spark, folder: Path, part: tuple[str, float] = ("all", 0.0)) -> list:
    """Encodes the documents of a frame in the executors, each task into one file of `folder`
    (encoded_file); returns a row (file, documents, text_bytes, null_texts) per task."""
    shared = spark.sparkContext.broadcast(tokenizer)

    def run(batches):
        yield encoded_file(batches, shared.value, folder, part)

    return docs.select("id", "text").mapInArrow(run, spark_schema(ENCODED_TASK_SCHEMA)).collect()


def encode_parquet(pieces: list, tasks: int, tokenizer: TokenizerFile, spark, folder: Path,
                   part: tuple[str, float] = ("all", 0.0), where: tuple[str, object] | None = None) -> list:
    """encode() of a document Parquet input's pieces (spark_stages.ingest.parquet_pieces), each task
    reading its own with pyarrow: the text goes from the file to the encoder, not through the JVM's
    Parquet reader and Arrow hand-over, which cost a tenth of the encoding on the same cores."""
    shared = spark.sparkContext.broadcast((pieces, tokenizer))

    def run(batches):
        listed, tokenizer = shared.value
        mine = [listed[i] for batch in batches for i in batch.column("id").to_pylist()]
        yield encoded_file(parquet_documents(mine, where=where), tokenizer, folder, part)

    return (spark.range(0, len(pieces), 1, min(len(pieces), tasks))
            .mapInArrow(run, spark_schema(ENCODED_TASK_SCHEMA)).collect())


ENCODED_FILE_SCHEMA = pa.schema([("key", pa.uint64()), ("id", pa.string()), ("tokens", pa.large_binary())])
ENCODED_TASK_SCHEMA = pa.schema([("file", pa.string()), ("documents", pa.int64()), ("text_bytes", pa.int64()),
                                 ("null_texts", pa.int64())])


def id_keys(ids: pa.Array) -> np.ndarray:
    """Each id's 64-bit hash, Spark's xxhash64(id) (XXH64, seed 42, the seed itself for a null id), as
    unsigned in the same order as its signed bits: a group is a range of it (group_bounds)."""
    hashes = np.fromiter((42 if i is None else xxhash.xxh64_intdigest(i.encode(), 42) for i in ids.to_pylist()),
                         np.uint64, len(ids))
    return hashes ^ np.uint64(1 << 63)


def group_keys(text: pa.Array, id_hashes: np.ndarray) -> np.ndarray:
    """Each document's packing-group key: XXH64 of its text's bytes seeded with its id's hash (id_keys), so that
    documents of one id spread over the groups as any others do (a million under one id were one group, one
    task holding them all). The held-out part is still chosen by the id's hash alone (in_part)."""
    large = pa.types.is_large_string(text.type) or pa.types.is_large_binary(text.type)
    offsets = np.frombuffer(text.buffers()[1], np.int64 if large else np.int32)[text.offset:text.offset + len(text) + 1]
    data = memoryview(text.buffers()[2] or b"")
    return np.fromiter((xxhash.xxh64_intdigest(data[start:end], seed) for start, end, seed in
                        zip(offsets[:-1].tolist(), offsets[1:].tolist(), id_hashes.tolist())), np.uint64, len(text))


def encoded_file(batches, tokenizer: TokenizerFile, folder: Path, part: tuple[str, float] = ("all", 0.0)
                 ) -> pa.RecordBatch:
    """Runs in a task: its documents' (group key, id, uint32 tokens as bytes) written to a file of its own in
    `folder`, one record batch per input batch, each sorted by key (memory stays one batch, however
    large the task); returns the row naming the file ("" for no documents). Documents without text (or
    over the record limit: parquet_documents) are counted, not encoded (the driver quarantines them); only
    those of `part` (in_part) are encoded."""
    name, writer, documents, text_bytes, null_texts = "", None, 0, 0, 0
    try:
        for batch in batches:
            if batch.column("text").null_count:
                null_texts += batch.column("text").null_count
                batch = batch.filter(pc.is_valid(batch.column("text")))
            key = id_keys(batch.column("id"))
            if (chosen := in_part(key, *part)) is not None:
                batch, key = batch.filter(pa.array(chosen)), key[chosen]
            if not batch.num_rows:
                continue
            text = batch.column("text")
            key = group_keys(text, key)
            tokens, offsets = encode_flat(tokenizer, text)
            text_bytes += pc.sum(pc.binary_length(text)).as_py()
            documents += batch.num_rows
            binary = pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,  # each document's ids as bytes
                                           [None, pa.py_buffer(4 * offsets), pa.py_buffer(tokens)])
            order = pa.array(np.argsort(key, kind="stable"))
            if writer is None:
                name = f"encoded-{uuid.uuid4().hex}.arrow"  # an attempt's own: a retry never writes into it
                writer = pa.ipc.new_file(str(folder / name), ENCODED_FILE_SCHEMA)
            ids = batch.column("id").cast(pa.string())  # large_string in some Parquet files
            writer.write_batch(pa.record_batch([pa.array(key), ids, binary], schema=ENCODED_FILE_SCHEMA).take(order))
    finally:
        if writer is not None:
            writer.close()
    return pa.RecordBatch.from_pylist([{"file": name, "documents": documents, "text_bytes": text_bytes,
                                        "null_texts": null_texts}], schema=ENCODED_TASK_SCHEMA)


def group_bounds(group: int, groups: int) -> tuple[int, int]:
    """[low, high) of the keys in `group` of `groups`: equal ranges of the key's top 32 bits."""
    def low(g):
        return -(-g * 2**32 // groups) << 32

    return low(group), low(group + 1)


def group_rows(encoded: list[pa.RecordBatch], group: int, groups: int) -> pa.Table:
    """The group's (id, tokens): its slice of every encoded record batch (each sorted by key)."""
    low, high = group_bounds(group, groups)
    slices = []
    for batch in encoded:
        keys = batch.column("key").to_numpy()
        lo = int(np.searchsorted(keys, np.uint64(low)))
        hi = int(np.searchsorted(keys, np.uint64(high))) if high < 2**64 else len(keys)
        slices.append(batch.slice(lo, hi - lo).select(["id", "tokens"]))
    return pa.Table.from_batches(slices)


def pack_groups(spark, folder: Path, files: list[str], groups: int, out: str, cfg: Config, pad_id: int) -> list:
    """Packs and writes every group into `out`; returns the written files' rows. A task takes a run of
    groups and maps each encoded file once for all of them (only the pages of its slices are read)."""
    listed = spark.sparkContext.broadcast(files)
    tasks = min(groups, TASKS_PER_CORE * spark.sparkContext.defaultParallelism)

    def run(batches):
        mapped = [_mapped_batches(folder / name) for name in listed.value]
        encoded = [batch for _, file_batches in mapped for batch in file_batches]
        for batch in batches:
            for group in batch.column("id").to_pylist():
                table = group_rows(encoded, group, groups)
                if table.num_rows:
                    yield from pack_and_write(table, group, out, cfg, pad_id).to_batches()
                for mapping, _ in mapped:  # what this group read leaves the task's memory
                    release_pages(mapping)

    return spark.range(0, groups, 1, tasks).mapInArrow(run, spark_schema(WRITTEN_SCHEMA)).collect()


def _mapped_batches(path: Path) -> tuple[pa.Buffer, list[pa.RecordBatch]]:
    """A file's whole mapping and its record batches, memory-mapped. Its descriptor is closed at once
    (the mapping lives as long as the buffers do): a task maps every encoding task's file, thousands
    at scale."""
    with pa.memory_map(str(path)) as source:
        return whole_mapping(source), pa.ipc.open_file(source).read_all().to_batches()


def pack_and_write(table: pa.Table, group: int, folder: str, cfg: Config, pad_id: int) -> pa.Table:
    """One packing group: sort by id (then tokens, for equal ids), pack, write its files."""
    in_place = [doc for chunk in table.column("tokens").chunks for doc in _token_views(chunk)]  # no copy
    order = pc.sort_indices(table, [("id", "ascending"), ("tokens", "ascending")]).to_numpy()
    docs = [in_place[i] for i in order.tolist()]
    rows = pack([len(d) for d in docs], cfg.pack)
    writer = ShardWriter(Path(folder), f"group-{group:05d}", cfg)
    for tokens, cu in zip(*materialize(rows, docs, pad_id)):
        writer.add(tokens, cu)
    files = writer.close()
    return pa.Table.from_pylist([{"grp": group, **dataclasses.asdict(f), "documents": len(docs) if i == 0 else 0}
                                 for i, f in enumerate(files)], schema=WRITTEN_SCHEMA)


def _token_views(chunk: pa.LargeBinaryArray) -> list[np.ndarray]:
    """Each document's uint32 ids: views of the chunk's buffer."""
    offsets = np.frombuffer(chunk.buffers()[1], np.int64)[chunk.offset:chunk.offset + len(chunk) + 1] // 4
    values = np.frombuffer(chunk.buffers()[2], np.uint32) if chunk.buffers()[2] else np.zeros(0, np.uint32)
    return [values[lo:hi] for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def run(spark, sources: Sources, cfg: Config, out: str, weights: str = "", records: dict[str, dict] | None = None
        ) -> dict:
    """Encodes, packs and writes every source's documents into one shards folder (and its held-out
    documents into SHARDS/heldout/, with heldout_share); returns the index as SHARDS/index.json holds it,
    with the held-out folder's under "heldout". The pipeline writes each source's shards apart. With
    split_by, a folder per value of the column and SHARDS/mixture.json (`weights`, else each one's rows).
    `records` (a file name: its JSON) are committed with each shards folder's index (the pipeline's
    decontamination.json): a folder complete without them would say its documents were never cut."""
    if cfg.split_by:
        return _split(spark, sources, cfg, out, weights or getattr(cfg, "weights", ""), records)
    return _written(spark, sources, cfg, out, records=records)


def _written(spark, sources: Sources, cfg: Config, out: str, where: tuple[str, object] | None = None,
             records: dict[str, dict] | None = None) -> dict:
    if not cfg.heldout_share:
        return write_shards(spark, sources, cfg, out, "all", where, records=records)
    # index.json, what marks the folder complete, comes after heldout/: written with the training shards, a job
    # killed during the held-out pass had left a folder the validator passed and a trainer read without held-out
    # loss. The training shards' commit writes it as PENDING_INDEX (and removes an earlier run's index.json).
    index = write_shards(spark, sources, cfg, out, "train", where, marker=PENDING_INDEX, records=records)
    record_written(Path(out), [HELDOUT, INDEX_FILE])  # after that commit, which removes what it did not write
    heldout = write_shards(spark, sources, cfg, str(Path(out) / HELDOUT), HELDOUT, where)
    os.replace(Path(out) / PENDING_INDEX, Path(out) / INDEX_FILE)
    return {**index, HELDOUT: heldout}


def _split(spark, sources: Sources, cfg: Config, out: str, weights: str, records: dict[str, dict] | None) -> dict:
    """A shards folder per value of cfg.split_by, and the mixture naming them."""
    files = all_files(sources)
    if not document_parquet(files):
        raise InputError(f"split_by reads a column of documents a tokenmill stage wrote (Parquet with id and "
                         f"text); {files[0].relative if files else 'the input'} is not")
    values = split_values(spark, [f.path for f in files], cfg.split_by)
    folders = {folder_name(value, cfg.split_by): value for value in values}
    chosen = parse_weights(weights)
    if chosen and set(chosen) != set(folders):  # found only once the column is read: the user's input, exit 2
        raise InputError(f"--weights names {', '.join(chosen)}; the values of {cfg.split_by} are "
                         f"{', '.join(folders)}")
    out_path = Path(out)
    claim_folder(out_path)  # tokenmill's (else refused), before its mixture goes
    (out_path / MIXTURE_FILE).unlink(missing_ok=True)  # first: no mixture may name shards being rewritten or removed
    replace_layout(out_path, {MIXTURE_FILE, *folders})  # no earlier run's index.json (read before mixture.json)
    parts = {name: _written(spark, sources, cfg, str(out_path / name), (cfg.split_by, value), records)
             for name, value in folders.items()}
    mixture = mixture_of(parts, chosen or None, f"split_by {cfg.split_by}: ")
    write_json(out_path / MIXTURE_FILE, mixture)
    return {"split_by": cfg.split_by, "parts": parts, "mixture": mixture}


def mixture_of(indexes: dict[str, dict], weights: dict[str, Fraction] | None, what: str = "") -> dict:
    """mixture.json's content for shards folders by name (their index.json), weighted by `weights` (else each
    one's rows); InputError where one holds no training row (its documents all held out, or without text): the
    loader refuses a source of none, and the job had written such a mixture and exited 0."""
    if empty := [name for name, index in indexes.items() if not index["totals"]["rows"]]:
        raise InputError(f"{what}{', '.join(empty[:5])}{' ...' if len(empty) > 5 else ''}: no training rows (its "
                         "documents all held out, or without text): a mixture cannot draw from it (hold out fewer, "
                         "heldout_share, or give more documents)")
    written = written_weights(weights) if weights else None
    return new_mixture({name: (name, written[name] if written else index["totals"]["rows"], index["totals"]["rows"],
                               index["totals"]["tokens"], f"{name}/{HELDOUT}" if HELDOUT in index else None)
                        for name, index in indexes.items()}).to_json()


def split_values(spark, paths: list[str], column: str) -> list:
    """The values of `column` over the documents, in order; InputError for a missing column or a null."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(*paths)
    if column not in frame.columns:
        raise InputError(f"split_by: the documents have no column {column!r} (they have {', '.join(frame.columns)})")
    counted = frame.groupBy(quoted(column)).agg(F.count("*").alias("n")).collect()  # "meta.label" as it is written
    # NaN is no value either: no document equals it, and its folder had been left empty, its documents in none
    if nulls := sum(row["n"] for row in counted if row[column] is None or _is_nan(row[column])):
        raise InputError(f"split_by: {nulls} documents have no {column} (null or NaN)")
    if len(counted) > MAX_SOURCES:  # each value a pass over the input, and a mixture the loader refuses
        raise InputError(f"split_by: {column} has {len(counted):,} values; a mixture has at most {MAX_SOURCES:,} "
                         "sources (a column of buckets or labels, not of ids)")
    return sorted(row[column] for row in counted)


def _is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def folder_name(value, column: str) -> str:
    """A value's shards folder: bN for a number N (a bucket), else the value itself when it is a plain name."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return f"b{value}"
    name = str(value)
    if why := name_problem(name):
        raise InputError(f"split_by: {column} holds {name[:60]!r}, which cannot name a shards folder: {why}")
    return name


def write_shards(spark, sources: Sources, cfg: Config, out: str, part: str,
                 where: tuple[str, object] | None = None, marker: str = INDEX_FILE,
                 records: dict[str, dict] | None = None) -> dict:
    """One shards folder of the documents of `part` (PARTS), those whose column holds a value (`where`)
    when given, with `records` beside them; its index, written last as `marker`."""
    files = all_files(sources)
    tokenizer = tokenizer_file(cfg)
    staging = staging_dir(out)
    encoded = staging / SCRATCH / "encoded"
    encoded.mkdir(parents=True)
    tasks, quarantined = _encoded_and_quarantined(spark, files, tokenizer, encoded, staging,
                                                  (part, cfg.heldout_share), where)
    # About one shard file per group, sized from the text: the same number whatever the partitions; and no
    # group of more than MAX_GROUP_DOCUMENTS documents (4,000,000 empty ones were one group: a task of 1.7 GB)
    text_bytes, read = sum(task.text_bytes for task in tasks), sum(task.documents for task in tasks)
    by_text = math.ceil(text_bytes / (TEXT_PER_SHARD_BYTE * cfg.shard_bytes))
    groups = max(1, by_text, math.ceil(read / MAX_GROUP_DOCUMENTS))
    if groups > MAX_SHARDS:  # before the packing: a shard a row, hours of it, and an index no loader reads
        if by_text == groups:
            raise InputError(f"--shard-mb {cfg.shard_mb:g} cuts {text_bytes:,} bytes of text into about {groups:,} "
                             f"shards; an index lists at most {MAX_SHARDS:,} (give a larger --shard-mb)")
        raise InputError(f"{read:,} documents make {groups:,} shards of at most {MAX_GROUP_DOCUMENTS:,} "
                         f"documents each; an index lists at most {MAX_SHARDS:,} (split the input into several runs)")
    log.info("%d bytes of text: %d packing groups", text_bytes, groups)
    files = [task.file for task in tasks if task.documents]
    written = pack_groups(spark, encoded, files, groups, str(staging), cfg, tokenizer.pad_id) if files else []
    documents = sum(entry.documents for entry in written)
    shards = []
    for entry in sorted(written, key=lambda r: (r.grp, r.file)):
        name = shard_name(len(shards))
        os.replace(staging / entry.file, staging / name)
        shards.append(ShardEntry(name, entry.rows, entry.tokens, entry.real_tokens, entry.bytes, entry.checksum,
                                 tuple(entry.batch_rows)))
        log.info("%s: %d rows, %d bytes", name, entry.rows, entry.bytes)
    for leftover in staging.glob("group-*"):  # of task attempts that failed, or lost the race to a retry
        leftover.unlink()
    index = new_index(shards, tokenizer_sha256=tokenizer.sha256, vocab_size=tokenizer.vocab_size,
                      seq_len=cfg.pack.seq_len, pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id,
                      eos_id=tokenizer.eos_id, compression_level=cfg.zstd_level, documents=documents,
                      quarantined=quarantined,
                      quarantine_checksum=content_checksum(spark, staging / "quarantine") if quarantined else None)
    for name, record in (records or {}).items():
        write_json(staging / name, record)
    # The index goes first and comes last; a previous run's shards, quarantine and records go if not rewritten.
    commit(staging, out, ["quarantine"] if quarantined else [], index.to_json(), marker=marker)
    return index.to_json()


def _encoded_and_quarantined(spark, files, tokenizer: TokenizerFile, folder: Path, staging: Path,
                             part: tuple[str, float], where: tuple[str, object] | None = None):
    """(encode's task rows, quarantined records), the quarantined written to STAGING/quarantine when any
    (the held-out part has none of its own: the training part lists them). A document Parquet input is
    read by the encoding tasks themselves, which count its documents without text: only if there are any
    does Spark read it again for them."""
    # Several tasks per core (a few large tasks leave cores idle at the end). Partitions never decide the
    # output here: groups do.
    min_tasks = TASKS_PER_CORE * spark.sparkContext.defaultParallelism
    if document_parquet(files):  # tasks no larger than the default partitions (about 128 MB of input each)
        count = max(min_tasks, default_partitions(files))
        tasks = encode_parquet(parquet_pieces(files, count), count, tokenizer, spark, folder, part, where)
        quarantined = sum(task.null_texts for task in tasks) if part[0] != HELDOUT else 0
        if quarantined:
            _write_quarantine(load_documents(spark, files, where=where)[1], quarantined, staging)
        return tasks, quarantined
    with persisted() as kept:  # raw input: a task per file (read_input), parsed once
        docs, quarantine = load_documents(spark, files, kept)
        tasks = encode(spread(docs, min_tasks), tokenizer, spark, folder, part)
        quarantined = quarantine.count() if part[0] != HELDOUT else 0
        if quarantined:
            _write_quarantine(quarantine, quarantined, staging)
        return tasks, quarantined


def _write_quarantine(quarantine, records: int, staging: Path) -> None:
    """STAGING/quarantine in a file per QUARANTINE_FILE_RECORDS records, each record's file chosen by a hash of
    the record and each file in the records' order: written as read, its files (and index.json's
    quarantine_checksum with them) followed the read splits, and so the cores (local[1] against local[2]); one
    file for all would be one task sorting them all."""
    from pyspark.sql import functions as F

    files = max(1, math.ceil(records / QUARANTINE_FILE_RECORDS))
    record = ["file", "line", "error", F.xxhash64(*hashable(quarantine))]
    (quarantine.repartition(files, *record).sortWithinPartitions(*record)
     .write.parquet(str(staging / "quarantine")))


def summary(index: dict) -> str:
    if "split_by" in index:
        weights = ", ".join(f"{name} {s['weight']}" for name, s in index["mixture"]["sources"].items())
        return "\n".join([f"split by {index['split_by']}:"] + [f"  {name}: {summary(part)}"
                                                                for name, part in index["parts"].items()]
                         + [f"mixture.json: {weights}"])
    t = index["totals"]
    line = (f"{t['documents']} documents -> {t['rows']} rows of at most {index['seq_len']} tokens in {t['shards']} "
            f"shards: {t['real_tokens']} real tokens, padding waste {t['padding_waste']:.2%}, "
            f"{t['bytes_per_token']:.3f} bytes/token on disk, {t['quarantined']} quarantined")
    if HELDOUT in index:
        held = index[HELDOUT]["totals"]
        line += f"; held out: {held['documents']} documents, {held['rows']} rows in {HELDOUT}/"
    return line


STAGE = Stage("shards", "Encode documents, pack them into rows and write zstd Arrow shards with an index.", JobConfig,
              run, summary, modules=("spark_stages.shards",), check=check)
