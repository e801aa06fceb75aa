"""Reading `--input` on Spark: one task per input file, records in READ_SCHEMA (prep/clean.py)."""

import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from prep.ingest.inputs import DEFAULT_SOURCE, InputError, InputFile
from prep.ingest.parquet_pages import row_group_pages
from prep.ingest.readers import ReaderConfig, huge_rows, rows_per_batch
from prep.ingest.records import READ_SCHEMA, read_records
from schemas import DOCUMENT_SCHEMA, QUARANTINE_SCHEMA
from schemas.documents import INTERNAL
from spark_stages.persisted import Persisted
from spark_stages.session import column, session_conf, spark_schema

SOURCE = INTERNAL + "source"  # the index of a document's source, in the order the sources were named
MAX_INPUT_PARTITIONS = 10_000
MIN_PARTITIONS = 8  # enough to keep a few cores busy on a small input
PARTITION_BYTES = 128 << 20  # about this much (uncompressed) input per task after the read
DRIVER_LISTED_FILES = 10_000
# a job's output files at most: Spark plans a task each, and takes a Java int (3,000,000,000 passed the
# settings' check and failed in the JVM after all the work); a million files of a 100 TB corpus are 100 MB each
MAX_PARTITIONS = 1_000_000


def estimated_bytes(file: InputFile) -> int:
    """The file's size, uncompressed (about: a compressed file counts four times its size)."""
    return os.path.getsize(file.path) * (4 if file.path.endswith((".gz", ".zst")) else 1)


def default_partitions(files: list[InputFile]) -> int:
    """From the input's size, never from the cores: the partitioning decides the output files."""
    return max(MIN_PARTITIONS, math.ceil(sum(map(estimated_bytes, files)) / PARTITION_BYTES))


def check_partitions(partitions: int | None) -> None:
    """A job's `partitions` setting (its output files; None: from the input's size), 1 to MAX_PARTITIONS."""
    if partitions is not None and not 1 <= partitions <= MAX_PARTITIONS:
        raise ValueError(f"partitions must be 1 to {MAX_PARTITIONS:,}, got {partitions}")


def spread(frame, partitions: int):
    """`frame` in at least `partitions` partitions: a read of a few large files (a task per file) is
    spread by a shuffle, so that every core has work; one already spread enough is left as it is."""
    return frame.repartition(partitions) if frame.rdd.getNumPartitions() < partitions else frame


def read_input(spark, files: list[InputFile], cfg: ReaderConfig):
    """A DataFrame in READ_SCHEMA: documents, quarantined records and file errors, with their positions."""
    return map_files(spark, files, lambda mine: read_records(mine, cfg), READ_SCHEMA)


def map_files(spark, files: list[InputFile], per_task, schema: pa.Schema):
    """A DataFrame (in `schema`) of what `per_task` yields in each task from the task's (file index, file)
    pairs: a task per input file, up to MAX_INPUT_PARTITIONS tasks."""
    # Compressed JSON Lines cannot be split, so a file is a task (up to a cap). The tasks get file
    # indexes from a range and the list as a broadcast (once per Python worker, not once per task): a
    # DataFrame made from a Python list or RDD would cost the driver 0.3 s of conversion for nothing.
    listing = spark.sparkContext.broadcast([(f.path, f.relative) for f in files])

    def task(batches):
        yield from per_task((i, InputFile(*listing.value[i])) for batch in batches for i in batch["id"].to_pylist())

    return spark.range(0, len(files), 1, min(len(files), MAX_INPUT_PARTITIONS)).mapInArrow(task, spark_schema(schema))


def document_parquet(files: list[InputFile]) -> bool:
    """Whether the input is Parquet with string `id` and `text` columns (a tokenmill stage's output), which
    is read as it is, every column kept with its type; anything else goes through the ingestion readers.
    Every file's footer is read and they must agree: Spark takes one file's schema, and a later file with
    another type in a column had failed the job in a task (a Java traceback); the readers quarantine such
    records, and a file whose schema cannot be read as damaged."""
    if not files or not all(f.path.endswith(".parquet") for f in files):
        return False
    try:
        first = pq.read_schema(files[0].path)
        if not all(name in first.names and first.field(name).type in (pa.string(), pa.large_string())
                   for name in ("id", "text")):
            return False
        return all(pq.read_schema(f.path).remove_metadata().equals(first.remove_metadata()) for f in files[1:])
    except (pa.ArrowInvalid, OSError):
        return False


def _native_parquet(spark, files: list[InputFile]):
    """The input read by Spark as it is (document_parquet), or None."""
    if not document_parquet(files):
        return None
    # The files are already listed (expand_inputs, on a file system the driver mounts): past 32 paths
    # Spark lists them again with a job of its own (0.5 s for 96 local files); stat-ing them on the
    # driver costs microseconds each. Beyond DRIVER_LISTED_FILES, Spark's parallel listing pays.
    with session_conf(spark, {"spark.sql.sources.parallelPartitionDiscovery.threshold":
                              str(max(32, min(len(files), DRIVER_LISTED_FILES)))}):
        return spark.read.parquet(*[f.path for f in files])


def parquet_pieces(files: list[InputFile], tasks: int) -> list[tuple[str, list[int] | None]]:
    """(path, row groups or None for all) pieces of a document_parquet input for at least `tasks` tasks
    where its row groups allow: a file each, or, when there are fewer files than tasks, runs of each
    file's row groups (only then are the footers read on the driver)."""
    if len(files) >= tasks:
        return [(f.path, None) for f in files]
    pieces = []
    for f in files:
        groups = pq.ParquetFile(f.path).num_row_groups
        runs = min(groups, math.ceil(tasks / len(files))) or 1
        pieces += [(f.path, list(range(i * groups // runs, (i + 1) * groups // runs))) for i in range(runs)]
    return pieces


def parquet_documents(pieces: list[tuple[str, list[int] | None]], batch_rows: int = 10_000,
                      where: tuple[str, object] | None = None, config: ReaderConfig | None = None):
    """Runs in a task: (id, text) record batches of a document_parquet input's pieces, as pyarrow reads
    them (one thread: the task has one core), each of about config.parquet_batch_bytes decoded (a row group
    whose rows are over twice the record limit on average has its text left unread). A file without one of
    the columns gives nulls for it, as Spark reads the input with the first file's schema; a document whose
    id or text is over config.max_record_bytes has a null id and text (load_documents quarantines both, each
    with its reason). `where` (column, value): only the documents whose column holds the value (none from a file
    without the column)."""
    config = config or ReaderConfig()
    for path, row_groups in pieces:
        schema = pq.ParquetFile(path).schema_arrow
        names = schema.names
        if where is not None and where[0] not in names:
            continue
        present = [name for name in ("id", "text") if name in names]
        # A string stored once in a dictionary may fill every row (1,000 rows of one 256 KB text from a file
        # of a few KB; the footer counts it once): read as dictionaries, sized, then decoded in slices; and
        # the column that `where` looks at is compared as its dictionary (_matching), never decoded.
        columns = (present or names[:1]) + ([where[0]] if where is not None and where[0] not in present else [])
        strings = [c for c in columns if pa.types.is_string(t := schema.field(c).type) or pa.types.is_binary(t)
                   or pa.types.is_large_string(t) or pa.types.is_large_binary(t)]
        parquet = pq.ParquetFile(path, read_dictionary=strings)
        for group in range(parquet.num_row_groups) if row_groups is None else row_groups:
            meta = parquet.metadata.row_group(group)
            pages = row_group_pages(path, meta)
            huge = huge_rows(meta, pages, config.max_record_bytes)
            read = [c for c in columns if c != "text"] if huge else columns
            rows = rows_per_batch(meta, pages, batch_rows, config.parquet_batch_bytes, dictionaries=False)
            for batch in parquet.iter_batches(rows, [group], columns=read or columns[:1], use_threads=False):
                if where is not None:
                    batch = batch.filter(_matching(batch.column(where[0]), where[1]))
                yield from _decoded_slices(batch, config.parquet_batch_bytes, config.max_record_bytes)


def _matching(values: pa.Array, value) -> pa.Array:
    """Where `values` equal `value`: a dictionary's entries compared once each (pyarrow's own comparison of a
    dictionary array decodes every row's entry first: 200 rows of one 512 KB string took 105 MB)."""
    if pa.types.is_dictionary(values.type):
        return pc.take(pc.equal(values.dictionary, pa.scalar(value)), values.indices)
    return pc.equal(values, pa.scalar(value))


def _decoded_slices(batch: pa.RecordBatch, budget: int, max_bytes: int):
    """(id, text) batches of `batch`'s rows, each of about `budget` bytes decoded (one row more at most), a
    row whose id or text is over `max_bytes` or not UTF-8, or whose id is null, null in both and never decoded
    (the rows load_documents quarantines)."""
    def named(name: str) -> pa.Array:
        return batch.column(name) if name in batch.schema.names else pa.nulls(batch.num_rows, pa.string())

    def lengths(values: pa.Array) -> np.ndarray:
        if pa.types.is_dictionary(values.type):
            values = pc.take(pc.binary_length(values.dictionary), values.indices)
        else:
            values = pc.binary_length(values)
        return pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)

    ids, texts = named("id"), named("text")
    id_bytes, text_bytes = lengths(ids), lengths(texts)
    over = (id_bytes > max_bytes) | (text_bytes > max_bytes) | ids.is_null().to_numpy(zero_copy_only=False)
    over |= _not_utf8(ids) | _not_utf8(texts)  # as load_documents quarantines them
    row_bytes = np.where(over, 0, id_bytes + text_bytes)
    starts = np.cumsum(row_bytes) - row_bytes
    cuts = [0, *(np.flatnonzero(np.diff(starts // max(budget, 1))) + 1).tolist(), batch.num_rows]
    for a, b in zip(cuts, cuts[1:]):
        keep = pa.array(~over[a:b])
        yield pa.record_batch([_decoded(ids.slice(a, b - a), keep), _decoded(texts.slice(a, b - a), keep)],
                              names=["id", "text"])


def _not_utf8(values: pa.Array) -> np.ndarray:
    """Whether each value is bytes that are not UTF-8: a string column of a file from elsewhere may hold any, and
    decoding it in Python fails (validated whole first; value by value only where that fails)."""
    if pa.types.is_dictionary(values.type):
        bad = _not_utf8(values.dictionary)
        return bad[pc.fill_null(values.indices, 0).to_numpy(zero_copy_only=False)] & ~values.is_null().to_numpy(
            zero_copy_only=False) if len(bad) else np.zeros(len(values), bool)
    try:
        values.validate(full=True)
        return np.zeros(len(values), bool)
    except pa.ArrowInvalid:
        raw = values.view(pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary())
        return np.array([value is not None and not _is_utf8(value) for value in raw.to_pylist()], bool)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decoded(values: pa.Array, keep: pa.Array) -> pa.Array:
    """`values` as plain strings, null where not `keep` (a dictionary's entry is copied only where kept)."""
    if pa.types.is_dictionary(values.type):
        return values.dictionary.take(pc.if_else(keep, values.indices, pa.scalar(None, values.indices.type)))
    return values if pc.all(keep).as_py() else pc.if_else(keep, values, pa.scalar(None, values.type))


def load_documents(spark, files: list[InputFile], kept: Persisted | None = None,
                   where: tuple[str, object] | None = None):
    """(documents with all their columns, quarantined records). With `kept` (a stage that reads its
    documents several times: sizes, samples, quarantine counts), raw input, which Python parses, is
    parsed once and kept until the stage ends; Parquet is not kept: Spark reads it again for less.
    `where` (column, value), for document Parquet only: the documents whose column holds the value."""
    native = _native_parquet(spark, files)
    if native is not None:
        if where is not None:
            from pyspark.sql import functions as F

            native = native.where(column(where[0]) == F.lit(where[1]))
        return _split_native(native, ReaderConfig().max_record_bytes)
    records = read_input(spark, files, ReaderConfig())
    return _split_records(kept.keep(records) if kept is not None else records)


def _split_native(native, max_bytes: int):
    """(documents, quarantined) of a Parquet input read as it is: a null text or id, an id or text over
    `max_bytes` (the readers' limit; a Parquet file from elsewhere may hold a value of any size, and every
    stage after would carry it), or one of bytes that are not UTF-8, is quarantined with its reason and the
    start of its text."""
    from pyspark.sql import functions as F

    text, doc_id = F.col("text"), F.col("id")
    problem = (F.when(text.isNull(), F.lit("text is null")).when(doc_id.isNull(), F.lit("id is null"))
               .when((F.octet_length(text) > max_bytes) | (F.octet_length(doc_id) > max_bytes),
                     F.lit(f"record over {max_bytes} bytes"))
               # bytes that are not UTF-8 in a string column: every Python task over the text failed on them
               .when(~F.is_valid_utf8(text), F.lit("text is not valid UTF-8"))
               .when(~F.is_valid_utf8(doc_id), F.lit("id is not valid UTF-8")))
    quarantine = native.where(problem.isNotNull()).select(
        problem.alias("error"), F.input_file_name().alias("file"), F.lit(None).cast("long").alias("line"),
        F.substring(text, 1, 1 << 18).cast("binary").alias("raw"))
    return native.where(problem.isNull()), quarantine


# A damaged file (a truncated stream: the records after the damage were never read) or bytes a reader
# ignored are one quarantine row each, naming the file (line and raw null): never dropped unseen. The
# clean job lists them apart instead (file_errors, file_warnings).
FILE_PROBLEMS = {"file_error": "damaged file: ", "file_warning": "ignored bytes: "}


def _split_records(records):
    from pyspark.sql import functions as F

    docs = records.where(F.col("status") == "doc").select(*DOCUMENT_SCHEMA.names)
    error = F.col("error")
    for status, prefix in FILE_PROBLEMS.items():
        error = F.when(F.col("status") == status, F.concat(F.lit(prefix), F.col("error"))).otherwise(error)
    quarantine = records.where(F.col("status") != "doc").withColumn("error", error).select(*QUARANTINE_SCHEMA.names)
    return docs, quarantine


def refuse_internal(columns: list[str], what: str = "the input") -> None:
    """InputError for an input column named as the jobs' own are (INTERNAL)."""
    if clash := [name for name in columns if name.lower().startswith(INTERNAL)]:
        raise InputError(f"{what} has a column {clash[0][:60]!r}: names starting {INTERNAL!r} are the jobs' own "
                         "(rename it)")


def load_sources(spark, sources: dict[str, list[InputFile]], kept: Persisted | None = None):
    """load_documents of each source, in one frame, each row with its source's index in SOURCE (the
    quarantined records too). Sources may carry other extra columns: missing ones are null."""
    from functools import reduce

    from pyspark.sql import functions as F

    loaded = [load_documents(spark, files, kept) for files in sources.values()]
    for name, (docs, _) in zip(sources, loaded):
        refuse_internal(docs.columns, "the input" if name == DEFAULT_SOURCE else f"source {name}")
    tagged = [(docs.withColumn(SOURCE, F.lit(i)), quarantine.withColumn(SOURCE, F.lit(i)))
              for i, (docs, quarantine) in enumerate(loaded)]
    docs = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), (d for d, _ in tagged))
    return docs, reduce(lambda a, b: a.unionByName(b), (q for _, q in tagged))
