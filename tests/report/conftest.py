"""Outputs of the real jobs on small real inputs (tests/report/corpus.py), made once for the report's
tests: the pipeline over a crawl and documents as two named sources with a benchmark, and the clean job
twice with different settings (for the comparison). Each job writes its report.html itself (the runner)."""

import pytest

from tests.report import corpus


@pytest.fixture(scope="session")
def spark():
    """One local Spark for the report's tests: each job run in this process takes it."""
    from spark_stages.session import get_spark

    session = get_spark("tokenmill-tests", ["spark.master=local[2]", "spark.sql.shuffle.partitions=2"])
    yield session
    session.stop()


@pytest.fixture(scope="session")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-inputs")
    return {"docs": corpus.documents(root / "docs"), "crawl": corpus.crawl(root / "crawl"),
            "benchmark": corpus.benchmark(root / "items.jsonl")}


@pytest.fixture(scope="session")
def pipeline_run(spark, inputs, tmp_path_factory):
    """The pipeline: extract (web), clean, dedup (and its shared paragraphs' step), decontaminate, tokenizer,
    shards; two named sources. What it printed is in stdout.txt beside the run's folder."""
    from spark_stages import pipeline
    from tests.spark_stages.conftest import run_printing

    del spark  # the session the job takes (getOrCreate)
    out = tmp_path_factory.mktemp("report-pipeline") / "run"
    code, printed = run_printing(pipeline.STAGE, ["--input", f"web={inputs['crawl'].parent}", "--input",
                                                  f"docs={inputs['docs']}", "--benchmark", f"ref={inputs['benchmark']}",
                                                  "--output", str(out), "--vocab-size", "1024",
                                                  "--dedup.paragraphs.enabled", "true"])
    (out.parent / "stdout.txt").write_text(printed)  # what the run printed, beside its folder
    assert code == 0
    return out


@pytest.fixture(scope="session")
def clean_runs(spark, inputs, tmp_path_factory):
    """The clean job on the documents, with the default settings and with longer documents required (and
    every document's normalization changes written)."""
    from spark_stages import clean
    from spark_stages.runner import run_stage

    del spark
    root = tmp_path_factory.mktemp("report-clean")
    runs = (root / "default", root / "stricter")
    assert run_stage(clean.STAGE, ["--input", str(inputs["docs"]), "--output", str(runs[0])]) == 0
    assert run_stage(clean.STAGE, ["--input", str(inputs["docs"]), "--output", str(runs[1]),
                                   "--en.gopher_quality.min_doc_words", "400", "--normalized_share", "1"]) == 0
    return runs
