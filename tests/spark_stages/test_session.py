"""The session every job starts with (spark_stages/session.py)."""

import pyarrow as pa


def test_python_workers_get_arrow_batches_of_at_most_a_thousand_rows(spark):
    # A worker holds about one batch: Spark's 10,000 rows made its memory grow with the partition.
    def sizes(batches):
        for batch in batches:
            yield pa.RecordBatch.from_pydict({"rows": [batch.num_rows]})

    rows = spark.range(0, 2500, 1, 1).mapInArrow(sizes, "rows long").collect()
    assert sorted(r.rows for r in rows) == [500, 1000, 1000]
