"""Reading --input on Spark: Parquet that is already a tokenmill output is read as it is, without
Spark listing the files a second time."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.ingest.inputs import expand_inputs
from spark_stages.ingest import load_documents

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
