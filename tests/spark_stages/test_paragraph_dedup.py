"""The dedup job's paragraph step on Spark: boilerplate planted across documents of real paragraphs (cookie
notices, newsletter prompts, a license line, a related-articles block) is removed from all but its first
document and no unique paragraph is; a document left too short is dropped with its reason; the same rows on
any partitioning; near matching folds years; lines and runs of sentences for text without paragraphs."""

import json
import random

import pyarrow.parquet as pq
import pytest

from prep.dedup.paragraphs import ParagraphConfig
from prep.ingest.inputs import expand_sources, single_source
from report import write_report
from spark_stages.dedup import Config, run
from tests.conftest import write_lines
from tests.report.page import table_rows
from tests.spark_stages.conftest import OTHER_CLUSTER, spark_settings
from tests.web_fixtures import paragraphs

pytestmark = pytest.mark.spark

BOILERPLATE = [
    "We use cookies to improve your experience on our site. By continuing to browse you agree to our use of cookies.",
    "Subscribe to our newsletter to get the latest articles delivered straight to your inbox every week.",
    "This article is licensed under a Creative Commons Attribution-ShareAlike 4.0 International License.",
    "Related articles: How to install packages, Choosing a mirror near you, What the release team does."]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """300 documents of three real paragraphs each, none shared, boilerplate planted in ~30% of them each, and
    four documents of one of the boilerplate paragraphs and a short line each."""
    rng, found = random.Random(0), paragraphs()
    unique = found[:900]
    docs = []
    for i in range(300):
        body = unique[3 * i:3 * i + 3]
        for line in BOILERPLATE:
            if rng.random() < 0.3:
                body.insert(rng.randrange(len(body) + 1), line)
        docs.append({"id": f"doc-{i}", "text": "\n\n".join(body)})
    docs += [{"id": f"thin-{i}", "text": f"{line}\n\n{word} {i}."}
             for i, (line, word) in enumerate(zip(BOILERPLATE, ["Archive", "Contact", "Imprint", "Search"]))]
    folder = tmp_path_factory.mktemp("planted")
    write_lines(folder / "docs.jsonl", docs)
    return folder, docs, unique


@pytest.fixture(scope="module")
def deduplicated(spark, planted, tmp_path_factory):
    folder, _, _ = planted
    out = tmp_path_factory.mktemp("paragraphs") / "out"
    cfg = Config(paragraphs=ParagraphConfig(enabled=True))
    return out, run(spark, single_source(str(folder)), cfg, str(out))


def test_shared_boilerplate_is_removed_from_all_but_its_first_document_and_unique_paragraphs_stay(planted,
                                                                                                  deduplicated):
    _, docs, unique = planted
    out, stats = deduplicated
    kept = pq.read_table(out / "docs").to_pylist()
    texts = [d["text"] for d in kept]
    planted_in = {line: sum(line in d["text"] for d in docs) for line in BOILERPLATE}
    assert min(planted_in.values()) > 50
    assert all(sum(line in t for t in texts) == 1 for line in BOILERPLATE)  # every occurrence but the first
    left = {p for t in texts for p in t.split("\n\n")}
    assert sum(p not in left for p in unique) == 0  # no unique paragraph removed
    shared = stats["paragraphs"]
    assert shared["shared_units"] == 4 and shared["units_removed"] == sum(planted_in.values()) - 4
    listed = pq.read_table(out / "paragraphs").to_pylist()
    assert sorted(row["text"] for row in listed) == sorted(BOILERPLATE)
    assert {row["text"]: row["documents"] for row in listed} == planted_in


def test_the_documents_the_step_changed_are_listed_by_id_with_the_units_removed(planted, deduplicated):
    _, docs, _ = planted
    out, stats = deduplicated
    before = {d["id"]: d["text"] for d in docs}
    changed = {d["id"] for d in pq.read_table(out / "docs").to_pylist() if d["text"] != before[d["id"]]}
    listed = pq.read_table(out / "changed").to_pylist()
    assert changed and {row["id"] for row in listed} == changed
    dropped = pq.read_table(out / "dropped").num_rows
    assert sum(row["units_removed"] for row in listed) + dropped <= stats["paragraphs"]["units_removed"]
    assert len(listed) + dropped == stats["paragraphs"]["documents_changed"]


def test_a_document_left_too_short_is_dropped_with_its_reason(planted, deduplicated):
    out, stats = deduplicated
    dropped = pq.read_table(out / "dropped").to_pylist()
    assert dropped and all(d["reason"] == "paragraphs:too_short" and d["id"].startswith("thin-") for d in dropped)
    kept = pq.read_table(out / "docs").column("id").to_pylist()
    assert stats["paragraphs"]["documents_dropped"] == len(dropped) and stats["kept"] == len(kept)
    assert len(kept) + len(dropped) == len(planted[1])
    assert json.loads((out / "stats.json").read_text())["paragraphs"] == stats["paragraphs"]


def test_each_sources_kept_count_leaves_out_the_documents_the_step_dropped(spark, planted, tmp_path):
    # stats.json's per-source counts add up to the top-level ones and to the rows written: a document the
    # paragraph step left too short is not kept in its source either
    folder, docs, _ = planted
    mirrors = [{"id": f"mirror-{i}", "text": f"{line}\n\nMirror page {i}."} for i, line in enumerate(BOILERPLATE)]
    write_lines(tmp_path / "thin" / "docs.jsonl", mirrors, mkdir=True)
    sources = expand_sources({"web": str(folder), "thin": str(tmp_path / "thin")})
    stats = run(spark, sources, Config(paragraphs=ParagraphConfig(enabled=True)), str(tmp_path / "out"))
    assert stats["sources"]["web"]["paragraphs_dropped"] > 0 and stats["sources"]["thin"]["paragraphs_dropped"] > 0
    for name, counts in stats["sources"].items():
        written = pq.read_table(tmp_path / "out" / "docs" / f"source={name}").num_rows
        assert counts["kept"] == written, name
    assert sum(c["kept"] for c in stats["sources"].values()) == stats["kept"]
    assert sum(c["paragraphs_dropped"] for c in stats["sources"].values()) == stats["paragraphs"]["documents_dropped"]
    row = " | ".join(str(stats["sources"]["thin"][key]) for key in (
        "input", "kept", "exact_duplicates", "near_duplicates", "in_an_earlier_source", "quarantined",
        "paragraphs_dropped"))
    assert f"| thin | {row} |" in (tmp_path / "out" / "report.md").read_text()


def test_the_same_rows_on_any_partitioning(spark, planted, deduplicated, tmp_path):
    folder, _, _ = planted
    out, stats = deduplicated
    with spark_settings(spark, OTHER_CLUSTER):
        again = run(spark, single_source(str(folder)), Config(paragraphs=ParagraphConfig(enabled=True),
                                                               partitions=stats_partitions(out) + 3),
                    str(tmp_path / "again"))
    rows = lambda o: sorted(map(json.dumps, pq.read_table(o / "docs").to_pylist()))  # noqa: E731
    assert rows(tmp_path / "again") == rows(out)
    assert again["paragraphs"] == stats["paragraphs"]


def stats_partitions(out) -> int:
    return len(list((out / "docs").glob("*.parquet")))


def test_near_matching_folds_the_years_and_lines_and_sentences_are_units_too(spark, tmp_path):
    body = paragraphs()[:40]
    docs = [{"id": f"d{i}", "text": f"{body[i]}\n\n© {2000 + i} Example Media Group. All rights reserved worldwide."}
            for i in range(20)]
    write_lines(tmp_path / "in" / "docs.jsonl", docs, mkdir=True)
    source = single_source(str(tmp_path / "in"))
    exact = run(spark, source, Config(paragraphs=ParagraphConfig(enabled=True)), str(tmp_path / "exact"))
    near = run(spark, source, Config(paragraphs=ParagraphConfig(enabled=True, near=True)), str(tmp_path / "near"))
    assert exact["paragraphs"]["units_removed"] == 0 and near["paragraphs"]["units_removed"] == 19
    # the same documents written without paragraph breaks: a line is a unit, a run of three sentences too
    notice = "Subscribe to the Example Media Group newsletter. It is sent every Monday. You can leave it any time."
    flat = [{"id": f"f{i}", "text": f"{body[20 + i]} {notice}"} for i in range(20)]
    write_lines(tmp_path / "flat" / "docs.jsonl", flat, mkdir=True)
    sentences = run(spark, single_source(str(tmp_path / "flat")),
                    Config(paragraphs=ParagraphConfig(enabled=True, unit="sentences")), str(tmp_path / "s"))
    kept = pq.read_table(tmp_path / "s" / "docs").column("text").to_pylist()
    assert sentences["paragraphs"]["units_removed"] >= 19 and sum(notice in t for t in kept) == 1


def test_the_first_copy_of_a_shared_unit_is_never_dropped_and_an_emptied_document_always_is(spark, tmp_path):
    """Found by review: a document first for one notice but not for another lost the other, fell under
    min_doc_chars and was dropped, and the notice it kept went from the whole corpus; with min_doc_chars 0 a
    document of nothing but shared notices was kept empty."""
    from prep.dedup.paragraphs import doc_key

    notice, prompt = BOILERPLATE[0], BOILERPLATE[1]
    body = paragraphs()[:8]

    def with_key(prefix: str, text: str, wanted) -> dict:  # a document of `text` whose order key is as wanted
        return next({"id": f"{prefix}{i}", "text": text} for i in range(10**6) if wanted(doc_key(f"{prefix}{i}", text)))

    text = f"{notice}\n\n{prompt}\n\nShort tail."
    both = with_key("both", text, lambda key: -(2**62) < key < 0)
    after, before = (lambda key: key > doc_key(both["id"], text)), (lambda key: key < doc_key(both["id"], text))
    holders = [with_key(f"n{i}-", f"{body[i]}\n\n{notice}", after) for i in range(4)]  # first for the notice
    holders += [with_key(f"p{i}-", f"{body[4 + i]}\n\n{prompt}", before if i == 0 else after) for i in range(4)]
    empty = with_key("empty", prompt, after)  # not the prompt's first: left with nothing
    write_lines(tmp_path / "in" / "docs.jsonl", [both, empty, *holders], mkdir=True)
    source = single_source(str(tmp_path / "in"))
    for minimum in (200, 0):
        out = tmp_path / f"out{minimum}"
        run(spark, source, Config(paragraphs=ParagraphConfig(enabled=True, min_doc_chars=minimum)), str(out))
        kept = {d["id"]: d["text"] for d in pq.read_table(out / "docs").to_pylist()}
        assert [i for i, t in kept.items() if notice in t] == [both["id"]]  # kept, under 200 characters
        assert kept[both["id"]] == f"{notice}\n\nShort tail." and sum(prompt in t for t in kept.values()) == 1
        dropped = {d["id"]: d["reason"] for d in pq.read_table(out / "dropped").to_pylist()}
        assert dropped[empty["id"]] == "paragraphs:too_short" and both["id"] not in dropped
        assert minimum or list(dropped) == [empty["id"]]  # min_doc_chars 0: the emptied document alone


def test_sources_deduplicated_apart_count_their_shared_units_apart(spark, tmp_path):
    """Found by review: with sources deduplicated apart (per_source), shared units were still counted across
    them: a notice whose first document was in one source was cut from every document of the other, and the
    same document kept in both sources was the first twice."""
    notice = BOILERPLATE[2]
    body = paragraphs()[:10]
    for name, part in (("a", body[:5]), ("b", body[5:])):
        write_lines(tmp_path / name / "docs.jsonl", [{"id": f"{name}{i}", "text": f"{p}\n\n{notice}"}
                                                    for i, p in enumerate(part)], mkdir=True)
    sources = expand_sources({"a": str(tmp_path / "a"), "b": str(tmp_path / "b")})
    cfg = Config(paragraphs=ParagraphConfig(enabled=True))
    for per_source, copies in ((True, {"a": 1, "b": 1}), (False, None)):
        out = tmp_path / f"out-{per_source}"
        run(spark, sources, cfg, str(out), per_source=per_source)
        found = {name: sum(notice in t for t in pq.read_table(out / "docs" / f"source={name}").column("text")
                           .to_pylist()) for name in ("a", "b")}
        assert found == copies if per_source else sum(found.values()) == 1, found
        # OUT/paragraphs: the notice counted in each source apart, each row naming its source (two rows alike)
        listed = [r for r in pq.read_table(out / "paragraphs").to_pylist() if r["text"] == notice]
        assert [r.get("source") for r in listed] == (["a", "b"] if per_source else [None]), listed
        shown = table_rows(write_report(out).read_text(), "The most shared, kept in the first document only")
        assert [row[:2] for row in shown] == [["5", "a"], ["5", "b"]] if per_source else [r[0] for r in shown] == ["10"]
