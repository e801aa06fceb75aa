"""`jobs.decontaminate` on Spark: benchmark items planted in documents of the sample are cut out span by
span and audited, everything else passes as it was, the counts add up, the same rows on another
partitioning, the command line's errors (the pipeline running it: tests/spark_stages/test_pipeline.py)."""

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.decontam.items import ItemsConfig
from prep.ingest.inputs import single_source
from spark_stages.decontaminate import Config, run
from tests.conftest import write_lines
from tests.decontam_fixtures import FOUND, NEAR_MISSES, chinese_items, english_items, hosts, planted
from tests.spark_stages.conftest import OTHER_CLUSTER, run_module, spark_settings

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def contaminated(tmp_path_factory):
    """(folder with in.jsonl, mmlu.jsonl (question and choices) and ceval.jsonl (text), the documents by id)."""
    folder = tmp_path_factory.mktemp("contaminated")
    rng = random.Random(11)
    english, chinese = english_items(30), chinese_items(30)
    questions = [t.rsplit(" ", 4) for t in english]  # the last four words as choices
    write_lines(folder / "mmlu.jsonl", [{"id": f"q{i}", "question": q[0], "choices": q[1:]}
                                        for i, q in enumerate(questions)])
    write_lines(folder / "ceval.jsonl", [{"text": t} for t in chinese])
    docs = {}
    for language, items, pool in (("en", english, hosts(False, 20)), ("zh", chinese, hosts(True, 20))):
        for i, kind in enumerate(FOUND + NEAR_MISSES):
            docs[f"{language}-{kind}"] = planted(kind, items[i], pool[i], rng, chinese=language == "zh")[0]
        for i, host in enumerate(pool[10:14]):
            docs[f"{language}-clean-{i}"] = host
    docs["en-short"] = "A note quoting a question.\n\n" + english[20]
    write_lines(folder / "in.jsonl", [{"id": k, "text": v, "lang": k[:2]} for k, v in docs.items()] + [b"{broken"])
    return folder, docs


def _config(folder, **more) -> Config:
    return Config(benchmarks={"mmlu": str(folder / "mmlu.jsonl"), "ceval": str(folder / "ceval.jsonl")},
                  items=ItemsConfig(by_benchmark={"mmlu": ["question", "choices"]}), **more)


@pytest.fixture(scope="module")
def decontaminated(spark, contaminated, tmp_path_factory):
    folder, _ = contaminated
    out = tmp_path_factory.mktemp("decontaminated")
    stats = run(spark, single_source(str(folder / "in.jsonl")), _config(folder), str(out))
    return out, stats


def test_the_counts_add_up_by_benchmark(decontaminated, contaminated):
    out, stats = decontaminated
    _, docs = contaminated
    assert stats["input"] == stats["kept"] + stats["dropped"] + stats["quarantined"] == len(docs) + 1
    assert stats["quarantined"] == 1 and stats["dropped_by_reason"] == {"too_short_after_removal": 1}
    assert stats["modified"] == 2 * len(FOUND) and stats["chars_removed"] > 0
    mmlu, ceval = stats["benchmarks"]["mmlu"], stats["benchmarks"]["ceval"]
    assert (mmlu["items"], ceval["items"]) == (30, 30)
    assert mmlu["items_found"] == len(FOUND) + 1 and mmlu["documents"] == len(FOUND) + 1
    assert ceval["items_found"] >= len(FOUND) and ceval["share_found"] == round(ceval["items_found"] / 30, 6)
    assert stats["spans"] == sum(b["spans_exact"] + b["spans_fuzzy"] for b in (mmlu, ceval)) == pq.read_metadata(
        next((out / "matches").glob("*.parquet"))).num_rows
    assert json.loads((out / "stats.json").read_text()) == stats and "| mmlu | 30 |" in (out / "report.md").read_text()


def test_matches_point_at_the_original_text_and_the_rest_passes_unchanged(decontaminated, contaminated):
    out, _ = decontaminated
    _, docs = contaminated
    matches = pq.read_table(out / "matches").to_pylist()
    assert pq.read_table(out / "matches").schema.names == ["id", "benchmark", "item", "start", "end", "score", "kind"]
    planted_ids = {m["id"] for m in matches}
    assert planted_ids == {f"{lang}-{kind}" for lang in ("en", "zh") for kind in FOUND} | {"en-short"}
    for m in matches:
        assert m["kind"] in ("exact", "fuzzy") and 0 < m["score"] <= 1 and 0 <= m["start"] < m["end"]
    verbatim = next(m for m in matches if m["id"] == "en-verbatim")
    assert docs["en-verbatim"][verbatim["start"]:verbatim["end"]].startswith(english_items(1)[0][:40])
    kept = {d["id"]: d for d in pq.read_table(out / "docs").to_pylist()}
    assert set(kept) == set(docs) - {"en-short"} and set(next(iter(kept.values()))) == {"id", "text", "source",
                                                                                         "metadata"}
    for doc_id, text in docs.items():
        if doc_id not in planted_ids:
            assert kept[doc_id]["text"] == text  # near misses and clean documents: byte for byte
        elif doc_id in kept:
            assert len(kept[doc_id]["text"]) < len(text)
    dropped = pq.read_table(out / "dropped").to_pylist()
    assert [(d["id"], d["reason"]) for d in dropped] == [("en-short", "too_short_after_removal")]
    assert dropped[0]["text"] == docs["en-short"]


def test_the_same_rows_on_another_partitioning(spark, contaminated, decontaminated, tmp_path):
    folder, _ = contaminated
    _, stats = decontaminated
    with spark_settings(spark, OTHER_CLUSTER):
        again = run(spark, single_source(str(folder / "in.jsonl")), _config(folder, partitions=3), str(tmp_path / "a"))
    for name in ("docs", "matches", "dropped"):  # the same content (the files are cut differently)
        assert again["checksums"][name].split(":")[0] == stats["checksums"][name].split(":")[0]


def test_rows_of_one_id_and_text_come_in_one_order_whatever_the_read_splits(spark, contaminated, tmp_path):
    """Rows of one id and one text, apart in another column (three files), were ordered by nothing of theirs:
    the shuffle fetched them in the files' order here, but a sort that spills merges its runs with ties in no
    set order. Every column now orders them (a guard: this passed before the change too)."""
    folder, docs = contaminated
    text = docs["en-clean-0"]
    (tmp_path / "in").mkdir()
    for name in "ABC":
        rows = [{"id": i, "text": t, "url": f"https://{name}/{i}"} for i, t in list(docs.items())[:40]]
        pq.write_table(pa.Table.from_pylist(rows + [{"id": "x", "text": text, "url": f"https://{name}/x"}]),
                       tmp_path / "in" / f"{name}.parquet", row_group_size=10, compression="none")
    checksums = []
    for name, split in (("default", "134217728"), ("small", "20000")):
        with spark_settings(spark, {"spark.sql.files.maxPartitionBytes": split}):
            stats = run(spark, single_source(str(tmp_path / "in")), _config(folder, partitions=1),
                        str(tmp_path / name))
        checksums.append(stats["checksums"]["docs"])
    assert checksums[0] == checksums[1] and int(checksums[0].split(":")[0]) > 40


def test_parquet_input_keeps_its_columns_and_types(spark, contaminated, tmp_path):
    """A timestamp with a time zone too: found by a newcomer's run through the docs (2026-12-08), a traceback
    and exit 1 (the dedup job's output of such a column, decontaminate.md's own chain, was refused the same)."""
    import datetime

    folder, docs = contaminated
    fetched = [datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i)
               for i in range(len(docs))]
    table = pa.table({"id": list(docs), "text": list(docs.values()), "year": pa.array(range(len(docs)), pa.int16()),
                      "fetched": pa.array(fetched, pa.timestamp("us", "UTC"))})
    pq.write_table(table, tmp_path / "in.parquet")
    run(spark, single_source(str(tmp_path / "in.parquet")), _config(folder), str(tmp_path / "out"))
    kept = pq.read_table(tmp_path / "out" / "docs")
    assert kept.schema.names == ["id", "text", "year", "fetched"] and kept.schema.field("year").type == pa.int16()
    by_id = {d["id"]: d for d in kept.to_pylist()}
    at = list(docs).index("en-clean-0")
    assert by_id["en-clean-0"]["year"] == at
    assert by_id["en-clean-0"]["fetched"].replace(tzinfo=datetime.timezone.utc) == fetched[at]  # the same instant


def test_input_columns_named_like_the_jobs_own_are_carried_or_refused_in_one_line(spark, contaminated, tmp_path):
    # `_status` (the job's own column, once) failed after all the matching, and so did `reason` (dropped/'s)
    from prep.ingest.inputs import InputError

    folder, docs = contaminated
    table = pa.table({"id": list(docs), "text": list(docs.values()), "_status": ["ok"] * len(docs),
                      "_spans": list(range(len(docs)))})
    pq.write_table(table, tmp_path / "in.parquet")
    run(spark, single_source(str(tmp_path / "in.parquet")), _config(folder), str(tmp_path / "out"))
    kept = pq.read_table(tmp_path / "out" / "docs")
    assert kept.schema.names == ["id", "text", "_status", "_spans"]
    assert set(kept.column("_status").to_pylist()) == {"ok"} and kept.column("_spans").to_pylist()[0] is not None
    dropped = pq.read_table(tmp_path / "out" / "dropped").to_pylist()
    assert [(d["id"], d["reason"], d["_status"]) for d in dropped] == [("en-short", "too_short_after_removal", "ok")]
    for name in ("Reason", "_TOKENMILL_status"):
        pq.write_table(table.append_column(name, pa.array(["x"] * len(docs))), tmp_path / f"with-{name}.parquet")
        with pytest.raises(InputError, match=f"column '{name}'"):
            run(spark, single_source(str(tmp_path / f"with-{name}.parquet")), _config(folder), str(tmp_path / name))


def test_the_command_line(contaminated, tmp_path):
    folder, _ = contaminated
    given = ["--input", str(folder / "in.jsonl"), "--output", str(tmp_path / "o")]
    printed = run_module("decontaminate", *given, "--benchmark", f"mmlu={folder}/mmlu.jsonl", "--print-config")
    assert printed.returncode == 0 and f"mmlu: {folder}/mmlu.jsonl" in printed.stdout
    missing = run_module("decontaminate", *given)
    assert missing.returncode == 2 and "no benchmark given" in missing.stderr
    wrong = run_module("decontaminate", *given, "--benchmark", f"mmlu={folder}/mmlu.jsonl")  # no text field
    assert wrong.returncode == 2 and "benchmark mmlu: no item" in wrong.stderr and "Traceback" not in wrong.stderr
    gone = run_module("decontaminate", *given, "--benchmark", f"x={tmp_path}/gone.jsonl")
    assert gone.returncode == 2 and "no such file" in gone.stderr
    # the first of a name given twice had been dropped unsaid (never decontaminated)
    twice = run_module("decontaminate", *given, "--benchmark", f"ceval={folder}/ceval.jsonl", "--benchmark",
                       f"ceval={folder}/mmlu.jsonl", "--print-config")
    assert twice.returncode == 2 and "--benchmark ceval=... is given twice" in twice.stderr
    # a benchmark inside the output: the run replaced its files (an input deleted), exit 0
    (tmp_path / "o2").mkdir()
    (tmp_path / "o2" / "bench.jsonl").write_bytes((folder / "ceval.jsonl").read_bytes())
    inside = run_module("decontaminate", "--input", str(folder / "in.jsonl"), "--output", str(tmp_path / "o2"),
                        "--benchmark", f"ceval={tmp_path}/o2/bench.jsonl")
    assert inside.returncode == 2 and "holds the input file" in inside.stderr and "Traceback" not in inside.stderr
    assert (tmp_path / "o2" / "bench.jsonl").read_bytes() == (folder / "ceval.jsonl").read_bytes()
    # (a whole run from the command line with --benchmark: the pipeline's, tests/spark_stages/test_pipeline.py)


@pytest.mark.parametrize("name", ["mmlu\ud800", "\udfff", "mm lu", "mmlu\n", "-x", "x" * 101])
def test_a_benchmark_name_from_yaml_is_held_to_the_flags_rule(name):
    """Noticed in review: YAML names any benchmark; names differing by a lone surrogate both became `mmlu?`
    in decontamination.json, which was then refused for a key given twice."""
    from spark_stages.decontaminate import read_benchmarks

    with pytest.raises(ValueError, match="benchmark .*: a name is (letters, digits|at most 100 characters)"):
        read_benchmarks(Config(benchmarks={"mmlu": "unread.jsonl", name: "unread.jsonl"}))
