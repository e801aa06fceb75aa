"""Reading --input on Spark: Parquet that is already a tokenmill output is read as it is, without
Spark listing the files a second time."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.ingest.inputs import expand_inputs
from spark_stages.ingest import document_parquet, load_documents, parquet_documents, parquet_pieces
from tests.conftest import write_lines

pytestmark = pytest.mark.spark


def test_many_parquet_files_are_read_without_a_listing_job(spark, tmp_path):
    # 40 files: past the 32 paths at which Spark would list them with a job of its own.
    for i in range(40):
        pq.write_table(pa.table({"id": [f"doc-{i}"], "text": [f"text {i}"] if i % 10 else [None]}),
                       tmp_path / f"part-{i:02d}.parquet")
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("ingest-listing", "load_documents of 40 Parquet files")
    try:
        docs, quarantine = load_documents(spark, expand_inputs(str(tmp_path)))
        tasks = [tracker.getStageInfo(stage).numTasks for job in tracker.getJobIdsForGroup("ingest-listing")
                 for stage in tracker.getJobInfo(job).stageIds]
    finally:
        spark.sparkContext.setJobGroup(None, None)
    assert 40 not in tasks  # Spark's listing job: one task per path
    assert sorted(docs.select("id").toPandas()["id"]) == sorted(f"doc-{i}" for i in range(40) if i % 10)
    assert quarantine.count() == 4


def test_damaged_files_and_ignored_bytes_are_quarantined_rows_naming_the_file(spark, tmp_path):
    records = [{"id": f"doc-{i}", "text": f"text number {i} " * 50} for i in range(40)]
    cut = write_lines(tmp_path / "cut.jsonl.gz", records, compress="gz")
    cut.write_bytes(cut.read_bytes()[:len(cut.read_bytes()) // 2])  # a transfer that stopped
    trailing = write_lines(tmp_path / "trailing.jsonl.gz", records[:3], compress="gz")
    trailing.write_bytes(trailing.read_bytes() + b"not another gzip member")
    docs, quarantine = load_documents(spark, expand_inputs(str(tmp_path)))
    rows = sorted((q["file"], q["error"].split(":")[0], q["line"]) for q in quarantine.collect())
    assert rows == [("cut.jsonl.gz", "damaged file", None), ("trailing.jsonl.gz", "ignored bytes", None)]
    assert 3 < docs.count() < 43  # the damaged file's records before the damage, and all the others


def test_parquet_pieces_split_a_few_files_by_row_groups_and_cover_each_once(tmp_path):
    table = pa.table({"id": [str(i) for i in range(100)], "text": ["t"] * 100})
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=10)  # 10 row groups
    pq.write_table(table, tmp_path / "b.parquet", row_group_size=100)  # 1
    files = expand_inputs(str(tmp_path))
    assert document_parquet(files)
    pieces = parquet_pieces(files, 8)
    assert [(path.rsplit("/", 1)[1], groups) for path, groups in pieces] == [
        ("a.parquet", [0, 1]), ("a.parquet", [2, 3, 4]), ("a.parquet", [5, 6]), ("a.parquet", [7, 8, 9]),
        ("b.parquet", [0])]
    assert sorted(i for batch in parquet_documents(pieces) for i in batch.column("id").to_pylist()) == sorted(
        [str(i) for i in range(100)] * 2)
    assert parquet_pieces(files, 2) == [(f.path, None) for f in files]  # enough files: one piece each


def test_only_parquet_with_string_id_and_text_is_read_as_documents(tmp_path):
    pq.write_table(pa.table({"id": [1], "text": ["t"]}), tmp_path / "numbers.parquet")
    pq.write_table(pa.table({"id": ["1"], "body": ["t"]}), tmp_path / "other.parquet")
    pq.write_table(pa.table({"id": ["1"], "text": pa.array(["t"], pa.large_string())}), tmp_path / "large.parquet")
    write_lines(tmp_path / "docs.jsonl", [{"id": "1", "text": "t"}])
    assert [document_parquet(expand_inputs(str(tmp_path / name)))
            for name in ("numbers.parquet", "other.parquet", "large.parquet", "docs.jsonl")] == [
        False, False, True, False]


def test_a_damaged_parquet_file_first_in_the_input_is_quarantined_not_a_crash(spark, tmp_path):
    pq.write_table(pa.table({"id": ["a"], "text": ["some text"]}), tmp_path / "b.parquet")
    (tmp_path / "a.parquet").write_bytes(b"PAR1 not really parquet")  # sorted first
    files = expand_inputs(str(tmp_path))
    assert not document_parquet(files)  # its schema cannot be read: the ingestion readers take the input
    docs, quarantine = load_documents(spark, files)
    assert [r["id"] for r in docs.collect()] == ["a"]
    assert [(q["file"], q["error"].split(":")[0]) for q in quarantine.collect()] == [("a.parquet", "damaged file")]


def test_parquet_files_of_other_schemas_are_read_record_by_record_not_a_crash(spark, tmp_path):
    """Found by review: only the first file's schema was looked at; a later file with an int64 text failed the
    dedup, decontamination and shards jobs in a task (PARQUET_COLUMN_DATA_TYPE_MISMATCH, a Java traceback)."""
    pq.write_table(pa.table({"id": ["a"], "text": ["some text"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": ["b"], "text": [42]}), tmp_path / "b.parquet")
    files = expand_inputs(str(tmp_path))
    assert not document_parquet(files)
    docs, quarantine = load_documents(spark, files)
    assert [r["id"] for r in docs.collect()] == ["a"]
    assert [(q["file"], q["error"]) for q in quarantine.collect()] == [("b.parquet", "text is int, not a string")]
    pq.write_table(pa.table({"id": ["b"], "text": ["more text"]}), tmp_path / "b.parquet")  # alike: as it is
    assert document_parquet(expand_inputs(str(tmp_path)))


def test_a_parquet_document_over_the_record_limit_is_quarantined_with_its_reason(spark, tmp_path):
    """Parquet that is already a tokenmill output is read by Spark as it is; a value of any size passed
    (the readers quarantine records over max_record_bytes, and docs/trust.md said Parquet rows were bounded)."""
    from prep.ingest.readers import ReaderConfig

    limit = ReaderConfig().max_record_bytes
    pq.write_table(pa.table({"id": ["ok", "big", "null", "big-id"],
                             "text": ["some text", "x" * (limit + 1), None, "short"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": ["i" * (limit + 1)], "text": ["t"]}), tmp_path / "b.parquet")
    docs, quarantine = load_documents(spark, expand_inputs(str(tmp_path)))
    assert [r["id"] for r in docs.collect()] == ["ok", "big-id"]
    rows = sorted((q["error"], q["file"].rsplit("/", 1)[-1], len(q["raw"] or b"")) for q in quarantine.collect())
    over = f"record over {limit} bytes"
    assert rows == [(over, "a.parquet", 1 << 18), (over, "b.parquet", 1), ("text is null", "a.parquet", 0)]


def test_a_parquet_document_of_invalid_utf8_or_a_null_id_is_quarantined_with_its_reason(spark, tmp_path):
    """Found by review: a text of bytes that are not UTF-8 in a string column failed the dedup job's Python task
    with a traceback (a job without Python over the text copied the bytes into output pyarrow cannot read), and
    a null id failed its MinHash task."""
    raw = pa.array([b"fine", b"bad \xed\xa0\x80 bytes", b"also fine", b"no id"], pa.binary())
    texts = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())
    ids = pa.array(["ok", "bad-text", "\xe9t\xe9", None], pa.string())
    pq.write_table(pa.table({"id": ids, "text": texts}), tmp_path / "a.parquet")
    docs, quarantine = load_documents(spark, expand_inputs(str(tmp_path)))
    assert [r["id"] for r in docs.collect()] == ["ok", "\xe9t\xe9"]
    assert sorted(q["error"] for q in quarantine.collect()) == ["id is null", "text is not valid UTF-8"]
    # the shards job's own reading of the file nulls the same rows, as it does a record over the limit
    texts = [t for batch in parquet_documents([(str(tmp_path / "a.parquet"), None)])
             for t in batch.column("text").to_pylist()]
    assert texts == ["fine", None, "also fine", None]


def test_a_dictionary_of_large_strings_is_decoded_in_batches_of_the_budget(tmp_path):
    """Parquet stores a repeated string once (dictionary encoding): the footer counts it once, and the shards'
    encoding tasks decoded 1,000 rows of one 256 KB text from a small file as one batch of 256 MB; an entry
    over the record limit was decoded into every row that holds it before being nulled."""
    from prep.ingest.readers import ReaderConfig

    path = tmp_path / "dict.parquet"
    pq.write_table(pa.table({"id": [f"{i}" for i in range(1000)],
                             "text": [f"{i % 2}" * (256 << 10) if i % 3 else "z" * (600 << 10) for i in range(1000)]}),
                   path, compression="zstd")
    assert path.stat().st_size < 64 << 10
    config = ReaderConfig(parquet_batch_bytes=4 << 20, max_record_bytes=512 << 10)
    batches = list(parquet_documents([(str(path), None)], config=config))
    assert max(b.nbytes for b in batches) <= (4 << 20) + (512 << 10), [b.nbytes for b in batches]
    ids = [i for b in batches for i in b.column("id").to_pylist()]
    texts = [t for b in batches for t in b.column("text").to_pylist()]
    assert ids == [None if i % 3 == 0 else f"{i}" for i in range(1000)]
    assert texts == [None if i % 3 == 0 else f"{i % 2}" * (256 << 10) for i in range(1000)]
    assert all(b.schema.field("text").type == pa.string() for b in batches)


def test_the_quarantine_of_one_value_of_a_column_holds_that_values_documents_alone(spark, tmp_path):
    """The shards job's --split-by writes a folder per value, each with the quarantine of its documents."""
    from prep.ingest.readers import ReaderConfig

    limit = ReaderConfig().max_record_bytes
    pq.write_table(pa.table({"id": ["a", "b", "c", "d"], "text": [None, "x" * (limit + 1), "ok", None],
                             "bucket": ["b0", "b1", "b1", "b1"]}), tmp_path / "a.parquet")
    files = expand_inputs(str(tmp_path))
    docs, quarantine = load_documents(spark, files, where=("bucket", "b1"))
    assert [r["id"] for r in docs.collect()] == ["c"]
    assert sorted(q["error"] for q in quarantine.collect()) == [f"record over {limit} bytes", "text is null"]
    texts = [t for batch in parquet_documents([(str(tmp_path / "a.parquet"), None)], where=("bucket", "b1"))
             for t in batch.column("text").to_pylist()]
    assert texts == [None, "ok", None]  # the encoding task counts what the driver quarantines


@pytest.mark.parametrize("codec", ["zstd", "snappy", "none"])
def test_the_pages_of_a_file_spark_writes_are_measured_as_its_footer_says(spark, tmp_path, codec):
    """parquet-mr writes its pages' headers otherwise than pyarrow (checksums, statistics): the page reader
    (prep/ingest/parquet_pages.py) measures them as its footer does, and every document is read."""
    from prep.ingest.parquet_pages import row_group_pages
    from prep.ingest.readers import parquet_rows

    rows = [(f"d{i}", f"text of document {i} " * (i % 50 + 1)) for i in range(5000)]
    spark.createDataFrame(rows, ["id", "text"]).coalesce(1).write.option("compression", codec).parquet(
        str(tmp_path / "out"))
    (path,) = (str(p) for p in (tmp_path / "out").glob("*.parquet"))
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.created_by.startswith("parquet-mr")
    for group in range(parquet.num_row_groups):
        meta = parquet.metadata.row_group(group)
        assert 0.99 * meta.total_byte_size <= row_group_pages(path, meta).decoded <= meta.total_byte_size
    assert [(row["id"], row["text"]) for row in parquet_rows(path, 1024, 1 << 20, 10_000_000)] == rows
