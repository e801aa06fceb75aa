"""The cleaning job on Spark, end to end: the sample corpus and hostile inputs."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from prep.ingest.inputs import InputFile, all_files, single_source
from schemas import CLEAN_DOCUMENT_SCHEMA, QUARANTINE_SCHEMA, REJECTED_SCHEMA
from spark_stages.clean import Config, cleaned_where_read, run
from spark_stages.ingest import PARTITION_BYTES
from tests.conftest import write_lines
from tests.prep.quality.test_rules import ENGLISH as PROSE
from tests.spark_stages.conftest import OTHER_CLUSTER, run_module, spark_settings, spark_submit

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def sample_run(spark, sample_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "out"
    stats = run(spark, single_source(str(sample_dir)), Config(), str(out))
    return out, stats


def rows(folder):
    return pq.read_table(folder).num_rows


def test_sample_outputs_and_accounting(sample_run):
    out, stats = sample_run
    assert stats["input"] == stats["kept"] + stats["rejected"] + stats["quarantined"] > 3000
    assert json.loads((out / "stats.json").read_text()) == stats
    assert rows(out / "docs") == stats["kept"] > 1000
    assert rows(out / "rejected") == stats["rejected"] == sum(stats["rejected_by_reason"].values())
    assert pq.read_schema(next((out / "docs").glob("*.parquet"))).names == CLEAN_DOCUMENT_SCHEMA.names
    assert pq.read_schema(next((out / "rejected").glob("*.parquet"))).names == REJECTED_SCHEMA.names
    docs = pq.read_table(out / "docs", columns=["lang"]).column("lang").to_pylist()
    assert docs.count("zh") > 0.15 * len(docs) and docs.count("en") > 0.5 * len(docs)
    assert "Removals per rule" in (out / "report.md").read_text()
    assert not (out / "_staging").exists()


def test_same_input_gives_the_same_rows_in_the_same_files(spark, sample_dir, tmp_path):
    files = single_source(str(sample_dir / "debian-faq*"))  # a subset keeps the rerun short
    a, b = tmp_path / "a", tmp_path / "b"
    stats_a = run(spark, files, Config(), str(a))
    with spark_settings(spark, OTHER_CLUSTER):  # and Arrow batches of 7 documents instead of 1,000
        stats_b = run(spark, files, Config(batch_records=7), str(b))
    assert stats_a["checksums"] == stats_b["checksums"] and set(stats_a["checksums"]) == {
        "docs", "rejected", "quarantine", "normalized"}
    for name in ("docs", "rejected"):
        parts_a, parts_b = sorted((a / name).glob("*.parquet")), sorted((b / name).glob("*.parquet"))
        assert [p.name for p in parts_a] == [p.name for p in parts_b]
        assert all(pq.read_table(x).to_pylist() == pq.read_table(y).to_pylist() for x, y in zip(parts_a, parts_b))


def test_a_task_per_file_and_a_shuffle_give_the_same_rows(spark, sample_dir, sample_run, tmp_path):
    files = single_source(str(sample_dir))
    listed = all_files(files)
    assert cleaned_where_read(listed, Config()) and not cleaned_where_read(listed, Config(partitions=3))
    out, stats = sample_run  # a task per file: each cleans what it reads
    with spark_settings(spark, OTHER_CLUSTER):
        shuffled = run(spark, files, Config(partitions=3), str(tmp_path / "shuffled"))
    assert {k: v for k, v in shuffled.items() if k not in ("seconds", "checksums")} == {
        k: v for k, v in stats.items() if k not in ("seconds", "checksums")}
    assert len(list((tmp_path / "shuffled" / "docs").glob("*.parquet"))) == 3 < len(list((out / "docs").glob("*")))
    for name in ("docs", "rejected", "quarantine"):
        ours, theirs = (pq.read_table(root / name) for root in (out, tmp_path / "shuffled"))
        assert ours.schema == theirs.schema
        assert sorted(ours.to_pylist(), key=str) == sorted(theirs.to_pylist(), key=str)


def test_large_or_few_files_are_spread_by_a_shuffle(tmp_path):
    many = [InputFile(str(write_lines(tmp_path / f"{i}.jsonl", [{"text": PROSE}])), f"{i}.jsonl") for i in range(8)]
    assert cleaned_where_read(many, Config()) and not cleaned_where_read(many[:7], Config())
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        f.truncate(2 * PARTITION_BYTES + 1)  # sparse: its size is what counts
    assert not cleaned_where_read([*many, InputFile(str(big), "big.jsonl")] * 2, Config())


def hostile_inputs(folder):
    folder.mkdir()
    write_lines(folder / "mixed.jsonl", [
        {"text": PROSE, "id": "good-1", "url": "https://example.org"},
        b'{"text": "broken',
        b'{"text": "\xff\xfe bad bytes"}',
        b"[1, 2, 3]",
        {"no_text": True},
        {"text": None},
        b'{"text": "nul \\u0000 byte"}',
        {"text": "x" * 7000},
        b"",
        {"text": "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " + PROSE, "id": "lorem"},
        b'{"text": "fine", "n": ' + b"7" * 5000 + b"}",  # json.loads raises ValueError: it ended the job once
    ])
    cut = write_lines(folder / "cut.jsonl.zst", [{"text": PROSE + str(i)} for i in range(20000)], "zst")
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    padded = write_lines(folder / "padded.jsonl.gz", [{"text": PROSE, "id": f"padded-{i}"} for i in range(30)], "gz")
    padded.write_bytes(padded.read_bytes() + b"\x00" * 100 + b"junk")  # an appended download, cut short
    (folder / "broken.parquet").write_bytes(b"PAR1 garbage")
    pq.write_table(pa.table({"text": [PROSE, None]}), folder / "table.parquet")
    (folder / "doc.txt").write_text(PROSE)
    (folder / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "empty.jsonl").write_bytes(b"")  # and an eighth file: enough for a task per file
    return folder


@pytest.mark.parametrize("partitions", [None, 3], ids=["a task per file", "spread by a shuffle"])
def test_hostile_inputs_are_all_accounted_for(spark, tmp_path, partitions):
    from prep.config import override

    cfg = override(Config(partitions=partitions), {"reader": {"max_record_bytes": 6000}})
    out = tmp_path / "out"
    inputs = single_source(str(hostile_inputs(tmp_path / "in")))
    assert cleaned_where_read(all_files(inputs), cfg) == (partitions is None)
    stats = run(spark, inputs, cfg, str(out))
    assert stats["input"] == stats["kept"] + stats["rejected"] + stats["quarantined"]
    quarantine = pq.read_table(out / "quarantine")
    assert quarantine.schema.names == QUARANTINE_SCHEMA.names
    q = {(r["file"], r["line"]): r["error"] for r in quarantine.to_pylist()}
    assert q[("mixed.jsonl", 2)].startswith("malformed JSON")
    assert q[("mixed.jsonl", 3)].startswith("invalid UTF-8")
    assert "not an object" in q[("mixed.jsonl", 4)]
    assert q[("mixed.jsonl", 5)] == "missing field 'text'" and q[("mixed.jsonl", 6)] == "text is null"
    assert "NUL" in q[("mixed.jsonl", 7)] and "over 6000 bytes" in q[("mixed.jsonl", 8)]
    assert q[("table.parquet", 2)] == "text is null" and "invalid UTF-8" in q[("latin1.txt", None)]
    assert "Exceeds the limit" in q[("mixed.jsonl", 11)]
    assert stats["quarantined"] == 10
    assert [e["file"] for e in stats["file_errors"]] == ["broken.parquet", "cut.jsonl.zst"]
    assert [(w["file"], "104 bytes" in w["warning"]) for w in stats["file_warnings"]] == [("padded.jsonl.gz", True)]
    assert stats["rejected_by_reason"].get("c4:lorem_ipsum") == 1
    assert pq.read_table(out / "rejected", columns=["id"]).column("id").to_pylist() == ["lorem"]
    kept_ids = pq.read_table(out / "docs", columns=["id"]).column("id").to_pylist()
    assert "good-1" in kept_ids and "doc.txt" in kept_ids and "table.parquet:1" in kept_ids
    assert {f"padded-{i}" for i in range(30)} <= set(kept_ids)  # every record before the trailing bytes
    assert sum(i.startswith("cut.jsonl.zst:") for i in kept_ids) > 1000  # records before the damage


def test_rerun_replaces_output_without_duplicates(spark, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_text(PROSE)
    out = tmp_path / "out"
    run(spark, single_source(str(inputs)), Config(), str(out))
    (out / "docs" / "part-00099.parquet").write_bytes(b"left over from a failed run")  # in tokenmill's own folder
    (out / "_staging" / "docs").mkdir(parents=True)  # and a failed run's staging
    stats = run(spark, single_source(str(inputs)), Config(), str(out))
    assert stats["kept"] == 1 and rows(out / "docs") == 1 and not (out / "_staging").exists()


def test_what_normalization_changed_is_written_for_the_documents_of_the_sample(spark, tmp_path):
    texts = {"mojibake": "The cafÃ© serves crÃ¨me brÃ»lÃ©e to everyone who asks for it.",
             "controls": "A bell\x07 rang twice\x1b[0m in the hall.", "clean": "Nothing to change here."}
    source = write_lines(tmp_path / "in" / "a.jsonl", [{"id": k, "text": v} for k, v in texts.items()], mkdir=True)
    run(spark, single_source(str(source)), Config(normalized_share=1.0), str(tmp_path / "all"))
    found = pq.read_table(tmp_path / "all" / "normalized").to_pylist()
    assert {row["id"] for row in found} == {"mojibake", "controls"}  # a text normalization left alone has none
    for row in found:
        text = texts[row["id"]]
        assert text[row["at"]:row["at"] + len(row["before"])] == row["before"] and row["source"] == "a.jsonl"
    assert any("Ã©" in row["before"] and "é" in row["after"] for row in found)
    assert any("\x07" in row["before"] and row["after"] == "" for row in found)
    run(spark, single_source(str(source)), Config(normalized_share=0.0), str(tmp_path / "none"))
    assert pq.read_table(tmp_path / "none" / "normalized").num_rows == 0


def test_cli_help_and_clear_errors(tmp_path):
    assert "--input" in run_module("clean", "--help").stdout
    missing = run_module("clean", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "out"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    bad_conf = tmp_path / "bad.yaml"
    bad_conf.write_text("en: {c4: {nope: 1}}\n")
    result = run_module("clean", "--input", str(tmp_path), "--output", str(tmp_path / "o"), "--config", str(bad_conf))
    assert result.returncode == 2 and "nope" in result.stderr


@pytest.mark.cluster  # spark-submit starts a JVM of its own: with the cluster tests (make test-cluster)
def test_spark_submit_runs_the_job_file(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    data = json.dumps({"text": PROSE}).encode() + b"\n" + b"{oops\n"
    (inputs / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    result = spark_submit("clean", "--input", str(inputs), "--output", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert (stats["input"], stats["kept"], stats["quarantined"]) == (2, 1, 1)


@pytest.mark.usefixtures("spark")
def test_a_rerun_stopped_midway_leaves_no_record_of_the_earlier_run_over_its_outputs(tmp_path):
    """Found by the kill review of 2026-12-07: a rerun killed after a stage replaced its outputs left the earlier
    run's run.json, settings.yaml and report.html saying it finished (the pipeline: stages of the new input
    beside shards of the old)."""
    import dataclasses

    import spark_stages.clean as clean_module
    from prep.ingest.inputs import InputError
    from tests.spark_stages.conftest import run_printing

    write_lines(tmp_path / "in" / "a.jsonl", [{"id": str(i), "text": PROSE} for i in range(3)], mkdir=True)
    args = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")]
    assert run_printing(clean_module.STAGE, args)[0] == 0
    records = ["report.html", "run.json", "settings.yaml"]
    assert all((tmp_path / "out" / name).exists() for name in records)
    real = clean_module.STAGE.run

    def killed_after_its_commit(spark, inputs, cfg, out):
        real(spark, inputs, cfg, out)
        raise KeyboardInterrupt("killed after the commit, before the report")

    with pytest.raises(KeyboardInterrupt):
        run_printing(dataclasses.replace(clean_module.STAGE, run=killed_after_its_commit), args)
    assert not any((tmp_path / "out" / name).exists() for name in records)
    assert (tmp_path / "out" / "stats.json").exists()  # the stage's outputs, complete, speak for themselves

    # stopped by bad input found on the way (a source dedup empties): the report of what is there, and a run.json
    # saying it stopped, not that it finished (the diff review: it said finished, over an earlier run's outputs)
    def stops(*_):
        raise InputError("a source is left without documents")

    assert run_printing(dataclasses.replace(clean_module.STAGE, run=stops), args)[0] == 2
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["stopped"] == "a source is left without documents" and "finished" not in run
    assert "a source is left without documents" in (tmp_path / "out" / "report.html").read_text()
