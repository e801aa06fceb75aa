"""The dedup job on Spark: exact and near duplicates, survivors, outputs, determinism."""

import dataclasses
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.dedup.shingles import units as shingle_units
from prep.ingest.inputs import expand_inputs, single_source
from prep.ingest.readers import Document, read_file
from spark_stages.dedup import Config, run
from tests.conftest import write_lines
from tests.spark_stages.conftest import OTHER_CLUSTER, run_module, spark_settings, spark_submit

pytestmark = pytest.mark.spark


def sample_docs(sample_dir, n=60):
    files = expand_inputs(str(sample_dir / "debian-handbook.en.jsonl.zst"))
    docs = [r for r in read_file(files[0]) if isinstance(r, Document) and 2000 < len(r.text) < 6000]
    return docs[:n]


@pytest.fixture(scope="module")
def corpus(sample_dir, tmp_path_factory):
    """Real sections, plus: exact copies in other case and spacing, edited near copies, short pages."""
    docs = sample_docs(sample_dir)
    rows = [{"id": d.id, "text": d.text, "lang": "en", "score": i} for i, d in enumerate(docs)]
    rows.append({"id": "exact-of-0", "text": docs[0].text.upper().replace(" ", "  "), "lang": "en", "score": -1})
    words = docs[1].text.split()
    rows.append({"id": "near-of-1", "text": " ".join(words[:-10] + ["Posted", "by", "admin", "on", "Monday."]),
                 "lang": "en", "score": -2})
    rows.append({"id": "repost-of-2", "text": "Home | News | Contact\n\n" + docs[2].text, "lang": "en", "score": -3})
    rows += [{"id": "short-a", "text": "Hello world", "lang": "en", "score": 0},
             {"id": "short-b", "text": "hello, WORLD!", "lang": "en", "score": 0},
             {"id": "short-c", "text": "Goodbye world", "lang": "en", "score": 0}]
    folder = tmp_path_factory.mktemp("dedup_in")
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet")
    return folder, docs, rows


@pytest.fixture(scope="module")
def result(spark, corpus, tmp_path_factory):
    folder, _, _ = corpus
    out = tmp_path_factory.mktemp("dedup") / "out"
    stats = run(spark, single_source(str(folder)), Config(partitions=3), str(out))
    return out, stats


def test_exact_and_near_duplicates_removed_and_survivor_is_longest(corpus, result):
    folder, docs, rows = corpus
    out, stats = result
    kept = pq.read_table(out / "docs")
    ids = set(kept.column("id").to_pylist())
    assert "exact-of-0" not in ids or docs[0].id not in ids
    assert not ({"near-of-1", docs[1].id} <= ids) and not ({"repost-of-2", docs[2].id} <= ids)
    assert "repost-of-2" in ids  # the longer copy (it has the menu line) survives
    assert len({"short-a", "short-b"} & ids) == 1 and "short-c" in ids  # short documents compared, not dropped
    assert stats["exact_duplicates"] >= 2 and stats["near_duplicates"] >= 2
    assert stats["input"] == len(rows) == stats["kept"] + stats["exact_duplicates"] + stats["near_duplicates"]
    assert kept.schema.names == ["id", "text", "lang", "score"]  # every input column, with its type
    assert kept.schema.field("score").type == pa.int64()
    expected_shingles = sum(max(1, len(shingle_units(r["text"])) - 4) for r in rows)  # 5-grams, 1 when shorter
    assert stats["shingles"] == expected_shingles and stats["signature_seconds"] > 0


def test_clusters_output(corpus, result):
    _, docs, _ = corpus
    out, stats = result
    clusters = pq.read_table(out / "clusters").to_pylist()
    assert {r["id"] for r in clusters} >= {"near-of-1", docs[1].id, "short-a", "short-b"}
    by_cluster = {}
    for r in clusters:
        by_cluster.setdefault(r["cluster"], []).append(r)
    for members in by_cluster.values():
        assert len(members) == members[0]["cluster_size"] >= 2 and len({m["cluster_id"] for m in members}) == 1
        assert sum(m["kept"] for m in members) >= 1 and members[0]["cluster_id"] in {m["id"] for m in members}
    assert len({r["cluster_id"] for r in clusters}) == len(by_cluster)  # no id repeats here
    assert stats["clusters"] == len(by_cluster) and stats["largest_cluster"] == max(map(len, by_cluster.values()))
    assert json.loads((out / "stats.json").read_text())["rounds"] == 0  # a small graph: solved on the driver


def test_same_survivors_whatever_the_partitioning(spark, corpus, result, tmp_path):
    folder, _, _ = corpus
    out, _ = result
    other = tmp_path / "other"
    run(spark, single_source(str(folder)), Config(partitions=7), str(other))

    def table(path, name):
        return sorted(pq.read_table(path / name).to_pylist(), key=lambda r: r["id"])

    assert table(out, "docs") == table(other, "docs")
    assert table(out, "clusters") == table(other, "clusters")


def test_same_rows_in_the_same_files_whatever_the_shuffle_partitions(spark, corpus, result, tmp_path):
    """Ranks are positions in survivor order, not ids that depend on how Spark partitioned the sort, so
    another cluster's shuffle settings give the same files, row for row."""
    folder, _, _ = corpus
    out, stats = result
    other = tmp_path / "other"
    with spark_settings(spark, OTHER_CLUSTER):
        other_stats = run(spark, single_source(str(folder)), Config(partitions=3), str(other))
    assert other_stats["checksums"] == stats["checksums"] and set(stats["checksums"]) >= {"docs", "clusters"}
    for name in ("docs", "clusters"):
        files = sorted(p.name for p in (out / name).glob("*.parquet"))
        assert files == sorted(p.name for p in (other / name).glob("*.parquet"))
        for file in files:
            assert pq.read_table(out / name / file).to_pylist() == pq.read_table(other / name / file).to_pylist()


@pytest.mark.parametrize("per_source", [False, True])
def test_decisions_in_memory_equal_the_spark_stages(spark, corpus, tmp_path, per_source):
    """A small corpus is decided on the driver after the signatures; a large one by the Spark stages: the
    same outputs, byte for byte, and the same stats. Two named sources, the second with copies of the
    first's documents under other ids, so that sources, scopes and earlier-source drops all count."""
    folder, _, rows = corpus
    (tmp_path / "b").mkdir()
    copies = [{**r, "id": f"b-{r['id']}", "text": r["text"] if i % 2 else r["text"].lower()}
              for i, r in enumerate(rows[:12])]
    pq.write_table(pa.Table.from_pylist(copies + [{"id": "b-own", "text": "A page of its own " * 30, "lang": "en",
                                                   "score": 7}]), tmp_path / "b" / "part-0.parquet")
    sources = {"a": expand_inputs(str(folder)), "b": expand_inputs(str(tmp_path / "b"))}
    found = {}
    for name, limit in (("memory", Config().in_memory_documents), ("spark", 0)):
        found[name] = run(spark, sources, Config(partitions=3, in_memory_documents=limit), str(tmp_path / name),
                          per_source=per_source)
    memory, on_spark = found["memory"], found["spark"]
    assert "decide in memory" in memory["seconds"] and "rank" in on_spark["seconds"]  # each took its path
    assert memory["sources"]["b"]["in_an_earlier_source"] == (0 if per_source else 12)
    assert memory["near_duplicates"] + memory["exact_duplicates"] > 0 and memory["clusters"] > 0
    for stats in (memory, on_spark):
        del stats["seconds"], stats["signature_seconds"]
    assert memory == on_spark  # the checksums of every output among them


@pytest.mark.parametrize("in_memory_documents", [Config().in_memory_documents, 0])
def test_giant_buckets_are_counted(spark, corpus, tmp_path, in_memory_documents):
    """Buckets over the giant size are each counted once: the count equals the buckets of the exact
    survivors' signatures, banded on the driver, that have more members than the limit."""
    from collections import Counter

    import numpy as np

    from prep.dedup.batches import DedupConfig, features_batch
    from prep.dedup.lsh import band_hashes

    folder, _, rows = corpus
    features = features_batch(pa.RecordBatch.from_pydict({"row": list(range(len(rows))), "id": [r["id"] for r in rows],
                                                          "text": [r["text"] for r in rows]}), DedupConfig())
    survivors = {}  # one signature per normalized text, as the exact stage leaves them
    for exact, signature in zip(features["exact_hash"].to_pylist(), features["signature"].to_pylist()):
        survivors.setdefault(exact, np.frombuffer(signature, np.uint32))
    keys = band_hashes(np.vstack(list(survivors.values())), DedupConfig().lsh)
    sizes = Counter((band, int(key)) for doc in keys for band, key in enumerate(doc))
    expected = sum(size > 1 for size in sizes.values())
    assert expected > 0  # the near copies share buckets
    stats = run(spark, single_source(str(folder)), Config(partitions=3, giant_bucket=1,
                                                          in_memory_documents=in_memory_documents),
                str(tmp_path / "out"))
    assert stats["giant_buckets"] == expected


def test_jsonl_input_bad_records_are_quarantined_and_counted(spark, tmp_path, sample_dir):
    docs = sample_docs(sample_dir, 5)
    path = write_lines(tmp_path / "in.jsonl", [{"text": d.text} for d in docs] + [b"{broken", {"text": docs[0].text}])
    stats = run(spark, single_source(str(path)), Config(partitions=2), str(tmp_path / "out"))
    assert (stats["input"], stats["quarantined"], stats["exact_duplicates"], stats["kept"]) == (7, 1, 1, 5)
    assert pq.read_table(tmp_path / "out" / "quarantine").column("line").to_pylist() == [6]
    assert pq.read_table(tmp_path / "out" / "docs").schema.names == ["id", "text", "source", "metadata"]


def test_a_damaged_file_is_quarantined_by_name_not_dropped(spark, tmp_path, sample_dir):
    docs = sample_docs(sample_dir, 6)
    write_lines(tmp_path / "in" / "whole.jsonl", [{"text": d.text} for d in docs[:3]], mkdir=True)
    cut = write_lines(tmp_path / "in" / "cut.jsonl.gz", [{"text": d.text} for d in docs[3:]], compress="gz")
    cut.write_bytes(cut.read_bytes()[:len(cut.read_bytes()) * 2 // 3])  # a transfer that stopped
    stats = run(spark, single_source(str(tmp_path / "in")), Config(partitions=2), str(tmp_path / "out"))
    quarantine = pq.read_table(tmp_path / "out" / "quarantine").to_pylist()
    assert [(q["file"], q["line"]) for q in quarantine] == [("cut.jsonl.gz", None)]
    assert quarantine[0]["error"].startswith("damaged file: ")
    assert stats["quarantined"] == 1 and stats["input"] == stats["kept"] + 1 >= 4  # what was read before it: kept


@pytest.mark.cluster  # spark-submit starts a JVM of its own: with the cluster tests (make test-cluster)
def test_cli_and_spark_submit(tmp_path, sample_dir):
    assert "--threshold" in run_module("dedup", "--help").stdout
    bad = run_module("dedup", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "o"))
    assert bad.returncode == 2 and "no such file" in bad.stderr
    assert run_module("dedup", "--input", "x", "--output", "y", "--threshold", "1.5").returncode == 2
    docs = sample_docs(sample_dir, 3)
    write_lines(tmp_path / "in.jsonl", [{"text": d.text} for d in docs] + [{"text": docs[1].text.upper()}])
    result = spark_submit("dedup", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"),
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert (stats["input"], stats["kept"], stats["exact_duplicates"]) == (4, 3, 1)


def test_input_without_documents_gives_empty_outputs(spark, tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [b"{broken", b"[1]"])
    stats = run(spark, single_source(str(path)), Config(partitions=2), str(tmp_path / "out"))
    assert (stats["input"], stats["quarantined"], stats["kept"], stats["clusters"]) == (2, 2, 0, 0)
    assert pq.read_table(tmp_path / "out" / "docs").num_rows == 0


def test_input_columns_named_like_the_jobs_own_are_kept_or_refused(spark, tmp_path, monkeypatch):
    """Found by the review of 2026-12-07: a Parquet input's column `rank` or `id_hash` failed the job at its last
    write, `_row` and `_source` were lost from OUT/docs, and a boolean `_dropped` removed its rows unsaid; a
    timestamp with a time zone failed the paragraphs step. The jobs' own columns now start `_tokenmill_`, an
    input's column that does is refused; and a corpus whose ids and signatures pass IN_MEMORY_BYTES is decided
    by the Spark stages (80,000 documents of 4,096 permutations had passed Spark's maxResultSize)."""
    import datetime

    import spark_stages.dedup as dedup
    from prep.ingest.inputs import InputError

    rng = random.Random(7)
    texts = [" ".join("".join(rng.choices("abcdefghij", k=6)) for _ in range(40)) for _ in range(6)]  # unlike
    when = datetime.datetime(2026, 12, 7, tzinfo=datetime.timezone.utc)
    table = pa.table({"id": [f"d{i}" for i in range(6)], "text": texts, "rank": list(range(6)),
                      "id_hash": ["h"] * 6, "_row": ["r"] * 6, "_source": ["s"] * 6, "_dropped": [True] * 6,
                      "fetched": pa.array([when] * 6, pa.timestamp("us", tz="UTC"))})
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "part-0.parquet")
    monkeypatch.setattr(dedup, "IN_MEMORY_BYTES", 1)
    monkeypatch.setattr(dedup, "_decided_in_memory", None)  # never called: the Spark stages decide
    cfg = Config(partitions=2, paragraphs=dedup.ParagraphConfig(enabled=True))
    stats = run(spark, single_source(str(tmp_path / "in")), cfg, str(tmp_path / "out"))
    kept = pq.read_table(tmp_path / "out" / "docs")
    assert stats["kept"] == kept.num_rows == 6 and "rank" in stats["seconds"]
    kept = kept.sort_by("id")
    assert kept.drop_columns(["fetched"]).to_pylist() == table.drop_columns(["fetched"]).to_pylist()
    def instants(column):  # Spark writes its own unit; the instant is the input's
        return column.cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()

    assert instants(kept["fetched"]) == instants(table["fetched"])

    pq.write_table(table.append_column("_tokenmill_row", pa.array([1] * 6)), tmp_path / "in" / "part-0.parquet")
    with pytest.raises(InputError, match="has a column '_tokenmill_row'"):
        run(spark, single_source(str(tmp_path / "in")), Config(partitions=2), str(tmp_path / "refused"))


def test_a_copy_in_its_own_source_is_not_counted_as_in_an_earlier_one(spark, tmp_path):
    """Found by the review of 2026-12-07: in a chain A (first source) ~ B ~ C ~ D (second), D removed as a copy of
    C, in its own source, was counted in_an_earlier_source (the cluster's first source), on both paths."""
    import itertools
    import string

    words = ["".join(p) for p in itertools.product(string.ascii_lowercase, repeat=3)][:400]

    def text(lo: int, pad: int = 0) -> str:  # consecutive windows: Jaccard 0.95 one step apart, 0.90 two
        return " ".join(words[lo:lo + 200] + [words[lo]] * pad)

    write_lines(tmp_path / "s0.jsonl", [{"id": "A", "text": text(0)}])
    write_lines(tmp_path / "s1.jsonl", [{"id": "B", "text": text(5, 20)}, {"id": "C", "text": text(10, 10)},
                                        {"id": "D", "text": text(15)}])
    sources = {"s0": expand_inputs(str(tmp_path / "s0.jsonl")), "s1": expand_inputs(str(tmp_path / "s1.jsonl"))}
    lsh = {"threshold": 0.93, "minhash": dataclasses.replace(Config().minhash, ngram=1, num_perm=2048)}
    for name, limit in (("memory", Config().in_memory_documents), ("spark", 0)):
        stats = run(spark, sources, Config(partitions=2, in_memory_documents=limit, **lsh), str(tmp_path / name))
        kept = sorted(pq.read_table(tmp_path / name / "docs", columns=["id"]).column("id").to_pylist())
        assert kept == ["A", "C"], name
        assert stats["sources"]["s1"]["in_an_earlier_source"] == 1, name  # B (a copy of A), not D (of C)


def test_copies_of_one_id_length_and_normalized_text_keep_the_same_one_whatever_the_read_splits(spark, tmp_path):
    """Found by the review of 2026-12-07: two Parquet files each holding id "x", the texts apart only in case,
    kept one or the other by spark.sql.files.maxPartitionBytes (the row, the last tie-break, follows the read
    splits); the raw text's hash now comes before it."""
    rng = random.Random(1)
    x = "the same document in two files, told apart only by its case " * 3
    filler = [{"id": f"f{i}", "text": " ".join("".join(rng.choices("abcdefghij", k=8)) for _ in range(120))}
              for i in range(350)]
    (tmp_path / "in").mkdir()
    pq.write_table(pa.Table.from_pylist(filler[:300] + [{"id": "x", "text": x.upper()}]),
                   tmp_path / "in" / "A.parquet", row_group_size=100, compression="none")
    pq.write_table(pa.Table.from_pylist(filler[300:] + [{"id": "x", "text": x}]), tmp_path / "in" / "B.parquet",
                   row_group_size=100, compression="none")
    checksums = []
    for name, split in (("default", "134217728"), ("small", "100000")):
        with spark_settings(spark, {"spark.sql.files.maxPartitionBytes": split}):
            stats = run(spark, single_source(str(tmp_path / "in")), Config(partitions=2), str(tmp_path / name))
        checksums.append(stats["checksums"]["docs"])
        assert stats["exact_duplicates"] == 1
    assert checksums[0] == checksums[1]


def test_copies_apart_only_in_other_columns_keep_the_same_row_whatever_the_read_splits(spark, tmp_path):
    """Three files each holding id "x" with one text, told apart only by their url: the survivor had followed
    the read splits (the row was the only key left); every column is now in the last hash."""
    rng = random.Random(2)
    x = "one document with one id and one text, copied into three files under three urls " * 3
    filler = [{"id": f"f{i}", "text": " ".join("".join(rng.choices("abcdefghij", k=8)) for _ in range(120)),
               "url": f"https://filler/{i}"} for i in range(450)]
    (tmp_path / "in").mkdir()
    for part, name in enumerate("ABC"):
        rows = filler[part * 150:(part + 1) * 150] + [{"id": "x", "text": x, "url": f"https://{name}/x"}]
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in" / f"{name}.parquet", row_group_size=50,
                       compression="none")
    outputs = []
    for name, split in (("default", "134217728"), ("small", "60000")):
        with spark_settings(spark, {"spark.sql.files.maxPartitionBytes": split}):
            stats = run(spark, single_source(str(tmp_path / "in")), Config(partitions=2), str(tmp_path / name))
        assert stats["exact_duplicates"] == 2
        outputs.append((stats["checksums"]["docs"], stats["checksums"]["clusters"]))
        kept = pq.read_table(tmp_path / name / "docs").to_pylist()
        assert [row["url"] for row in kept if row["id"] == "x"] in (["https://A/x"], ["https://B/x"], ["https://C/x"])
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("in_memory_documents", [Config().in_memory_documents, 0])
def test_clusters_whose_first_documents_share_an_id_are_told_apart(spark, tmp_path, in_memory_documents):
    """Found by a review: two unrelated clusters, each led by a document of id "a", were both cluster_id "a" in
    OUT/clusters, one cluster to whoever read it (the report showed their members together). Each cluster now
    has a number of its own, the same in every run."""
    first = "the first story about a harbour town and its fishing boats, told at length " * 4
    second = "a second and unrelated story, about mountain railways and their tunnels, " * 4
    rows = [{"id": "a", "text": first + " "}, {"id": "b", "text": first}, {"id": "a", "text": second + " "},
            {"id": "c", "text": second}, {"id": "d", "text": "a document of its own, in no cluster at all " * 4}]
    (tmp_path / "in").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in" / "part-0.parquet")
    numbers = []
    for out, partitions in (("one", 2), ("two", 5)):
        run(spark, single_source(str(tmp_path / "in")),
            Config(partitions=partitions, in_memory_documents=in_memory_documents), str(tmp_path / out))
        clusters = pq.read_table(tmp_path / out / "clusters").to_pylist()
        assert sorted((r["id"], r["cluster_id"], r["kept"]) for r in clusters) == [
            ("a", "a", True), ("a", "a", True), ("b", "a", False), ("c", "a", False)]
        by_number = {}
        for r in clusters:
            by_number.setdefault(r["cluster"], set()).add(r["id"])
        assert sorted(map(sorted, by_number.values())) == [["a", "b"], ["a", "c"]]
        numbers.append(sorted(by_number))
    assert numbers[0] == numbers[1]
