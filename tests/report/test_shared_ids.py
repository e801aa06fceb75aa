"""Inputs whose ids are not unique text: ids that repeat (a crawl read twice, two sources numbered alike), ids
that are numbers, files without an id column (the jobs name their rows by file and line). The report neither
fails on them nor shows one document's text, marks or similarity as another's: outputs made here with
pyarrow in the shapes the jobs write (no Spark)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from report import ReportConfig, write_report
from report.compare import compare
from report.lookup import COPIES, documents_by_id
from tests.report.page import read_page
from tests.report.test_bounds import clean_output

LICENSE = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
           "associated documentation files, to deal in the Software without restriction.")
MANUAL = ("The package manager keeps a list of the packages installed on the system, with their versions and the "
          "files each of them owns; it removes a package with every file it installed.")


def test_the_lookup_reads_numbers_as_the_jobs_write_them_passes_over_files_without_ids_and_counts_copies(tmp_path):
    pq.write_table(pa.table({"text": [LICENSE, MANUAL]}), tmp_path / "no-ids.parquet")
    numbers = pa.array([4, 47], pa.int64())
    pq.write_table(pa.table({"id": numbers, "text": [LICENSE, MANUAL]}), tmp_path / "ints.parquet")
    pq.write_table(pa.table({"id": ["X", "X", "Y"], "text": [LICENSE, MANUAL, MANUAL]}), tmp_path / "repeats.parquet")
    found = documents_by_id(sorted(tmp_path.glob("*.parquet")), {"4", "47", "X", "Y"}, 1 << 20, 10)
    assert found["4"]["text"] == LICENSE and found["47"]["text"] == MANUAL and found["47"]["id"] == "47"
    assert found["X"][COPIES] == 2 and found["Y"][COPIES] == 1 and found["4"][COPIES] == 1


def dedup_output(folder, input_folder, numbered: bool = False):
    """A dedup job's output over an input where id X names two different documents, each the survivor of its
    own cluster: X (the license) with a copy of it under the id X-copy, and X (the manual) with Y; with
    `numbered`, the clusters' numbers as dedup writes them now (clusters/ of an older layout had none)."""
    pq.write_table(pa.table({"id": ["X", "X-copy", "X", "Y"], "text": [LICENSE, LICENSE, MANUAL, MANUAL]}),
                   input_folder / "part-0.parquet")
    (folder / "docs").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["X", "X"], "text": [LICENSE, MANUAL]}), folder / "docs" / "part-00000.parquet")
    (folder / "clusters").mkdir()
    clusters = pa.table({"id": ["X", "X-copy", "X", "Y"], "cluster_id": ["X"] * 4, "cluster_size": [2] * 4,
                         "kept": [True, False, True, False]})
    if numbered:
        clusters = clusters.add_column(2, "cluster", pa.array([-71, -71, 5, 5], pa.int64()))
    pq.write_table(clusters, folder / "clusters" / "part-00000.parquet")
    stats = {"format_version": "1", "input": 4, "kept": 2, "exact_duplicates": 2, "near_duplicates": 0,
             "quarantined": 0, "clusters": 2, "largest_cluster": 2, "cluster_size_histogram": {"2": 2}}
    (folder / "stats.json").write_text(json.dumps(stats))
    (folder / "run.json").write_text(json.dumps({"job": "dedup", "inputs": {"input": str(input_folder)}}))
    (folder / ".tokenmill").write_text(json.dumps({"written": ["docs", "clusters", "stats.json"]}))
    return folder


def test_clusters_sharing_an_id_say_so_and_claim_no_similarity_between_documents_they_cannot_tell_apart(tmp_path):
    (tmp_path / "in").mkdir()
    out = dedup_output(tmp_path / "out", tmp_path / "in")
    page = read_page(write_report(out, ReportConfig(read_outside=True)).read_text())  # its input: outside it
    assert "2 clusters have this id (ids repeat in the input)" in page.text
    assert "2 documents of the input have this id: the first is shown" in page.text
    # Y is the manual's exact copy, X-copy the license's: with X's text ambiguous, neither is called a duplicate
    # of "the survivor" nor given a similarity to it
    assert "an exact duplicate" not in page.text and "similarity" not in page.text


def test_clusters_sharing_an_id_are_shown_apart_by_their_numbers(tmp_path):
    """Found by a review: with only cluster_id, two clusters led by documents of one id were one cluster to the
    report, their members shown together; dedup now numbers its clusters."""
    (tmp_path / "in").mkdir()
    out = dedup_output(tmp_path / "out", tmp_path / "in", numbered=True)
    page = read_page(write_report(out, ReportConfig(read_outside=True)).read_text())
    assert "clusters have this id" not in page.text
    assert page.text.count("Cluster of 2 (") == 2  # each cluster with its own member
    assert page.text.count("X-copy") == 1 and "2 documents of the input have this id: the first is shown" in page.text


def test_a_comparison_counts_every_document_of_an_id_that_repeats(tmp_path):
    a = clean_output(tmp_path / "a", 16, reasons=1, files=1)
    b = clean_output(tmp_path / "b", 16, reasons=1, files=1)
    # in both runs the input had a second document of the id of the first kept one: kept in a, rejected in b
    first = pq.read_table(a / "docs").slice(0, 1)
    pq.write_table(first, a / "docs" / "part-00009.parquet")
    rejected = first.append_column("reason", pa.array(["rule:too short"]))
    pq.write_table(rejected.select(pq.read_schema(b / "rejected" / "part-00000.parquet").names),
                   b / "rejected" / "part-00009.parquet")
    _, _, stages, _ = compare(a, b, ReportConfig())
    clean = stages[0]
    assert clean.compared == 17  # 8 kept, 8 rejected, and the second document of the repeated id
    assert [(c.before, c.after, c.count) for c in clean.changes] == [("kept", "rejected: rule:too short", 1)]
    note = "2 documents of the input have this id: the first is shown"
    assert clean.changes[0].pairs[0].right.fields["note"] == note


def test_the_inputs_a_run_names_are_searched_within_a_bound(tmp_path, monkeypatch):
    """Found by trying: a standalone job's run.json from elsewhere naming "/" as its input made the report search
    the whole file system for Parquet files."""
    import report.lookup as lookup

    for i in range(30):
        (tmp_path / f"d{i:02d}").mkdir()
        (tmp_path / f"d{i:02d}" / "part-0.parquet").write_bytes(b"")
        (tmp_path / f"d{i:02d}" / "notes.txt").write_text("not Parquet")
    assert len(lookup.parquet_files([str(tmp_path)])) == 30
    monkeypatch.setattr(lookup, "MAX_WALK_ENTRIES", 40)  # the 30 folders, then the two names of each of 5
    assert [p.parent.name for p in lookup.parquet_files([str(tmp_path)])] == [f"d{i:02d}" for i in range(5)]
    # the 30 folders a glob matches share the bound: 20 of them walked
    assert [p.parent.name for p in lookup.parquet_files([f"{tmp_path}/d*"])] == [f"d{i:02d}" for i in range(20)]
    monkeypatch.setattr(lookup, "MAX_WALK_ENTRIES", 20)
    assert lookup.parquet_files([f"{tmp_path}/d*/part-0.parquet"]) == []  # more matches than that: none, always
    monkeypatch.setattr(lookup, "MAX_WALK_ENTRIES", 30)
    assert len(lookup.parquet_files([f"{tmp_path}/d*/part-0.parquet"])) == 30


def test_an_id_in_every_row_of_a_cut_output_has_its_fates_rewritten_once(tmp_path, monkeypatch):
    """Found by a review: each row of OUT/changed (or matches) naming an id rewrote the fates of every document of
    that id: one id in 20,000 rows of each was 400 million rewrites (31 s); now each id's once."""
    import report.compare

    rows, rewritten = 2_000, []

    class Counted(dict):
        def __setitem__(self, key, value):
            rewritten.append(key)
            super().__setitem__(key, value)

    fates = report.compare.Fates
    monkeypatch.setattr(report.compare, "Fates", lambda: fates(fate=Counted()))
    (tmp_path / "in").mkdir()
    plain = dedup_output(tmp_path / "plain", tmp_path / "in")
    cut = dedup_output(tmp_path / "cut", tmp_path / "in")
    for out in (plain, cut):
        pq.write_table(pa.table({"id": ["X"] * rows, "text": [LICENSE] * rows}), out / "docs" / "part-00000.parquet")
    (cut / "changed").mkdir()
    pq.write_table(pa.table({"id": ["X"] * rows, "units_removed": pa.array([1] * rows, pa.int64())}),
                   cut / "changed" / "part-00000.parquet")
    _, _, stages, _ = compare(plain, cut, ReportConfig())
    assert [(c.before, c.after, c.count) for c in stages[0].changes] == [("kept", "kept, paragraphs cut", rows)]
    assert rewritten == ["X"]
