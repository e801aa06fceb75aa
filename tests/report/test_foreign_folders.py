"""A run folder from elsewhere (a colleague's run, a copy cut short, an older version's): the report reads no
file outside it unless told to, says what it left out and why, names what is damaged, and shows the rest; it
never ends in a traceback. Folders made here with pyarrow in the shapes the jobs write (no Spark)."""

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.decontam.cut import cut_ranges
from report import ReportConfig, write_report
from report.cli import main
from report.compare import compare
from report.html import number
from report.layout import HELDOUT, LayoutError, stage_dirs
from report.run import Run
from report.stages.common import MAX_DAMAGED_NAMED, reason_sample
from tests.report.page import read_page, table_rows
from tests.report.test_bounds import MARKUP, clean_output
from tests.report.test_shared_ids import dedup_output

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI"
PRIVATE = "private customer record: card 4111 1111 1111 1111"
FLAG = "--read-outside true"


def owned(folder, names):
    (folder / ".tokenmill").write_text(json.dumps({"written": names}))
    return folder


def decontaminate_output(folder, benchmark):
    """A decontaminate job's output whose settings.yaml names `benchmark` (a .txt file: its item is its file
    name) and whose matches name that item."""
    (folder / "matches").mkdir(parents=True)
    (folder / "stats.json").write_text(json.dumps({"input": 1, "kept": 1, "dropped": 0, "quarantined": 0,
                                                   "benchmarks": {"leak": {"items": 1}}}))
    (folder / "settings.yaml").write_text(f"benchmarks:\n  leak: {benchmark}\n")
    pq.write_table(pa.table({"id": ["d1"], "benchmark": ["leak"], "item": [benchmark.name], "start": [0],
                             "end": [5], "score": [1.0], "kind": ["exact"]}), folder / "matches" / "part-0.parquet")
    return owned(folder, ["stats.json", "matches", "settings.yaml"])


def test_files_outside_a_folder_from_elsewhere_are_read_only_when_told(tmp_path):
    """Found by a review: settings.yaml naming a file of the reader's as a benchmark, and run.json naming one
    as an input, put that file's text into the page that gets shared."""
    secret = tmp_path / "home" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n")
    out = decontaminate_output(tmp_path / "decontaminate", secret)
    html = write_report(out).read_text()
    assert "wJalrXUtnFEMI" not in html and FLAG in html  # left out, and said so
    assert "wJalrXUtnFEMI" in write_report(out, ReportConfig(read_outside=True)).read_text()  # a folder you trust

    local = tmp_path / "home" / "private.parquet"
    pq.write_table(pa.table({"id": ["row-7"], "text": [PRIVATE]}), local)
    out = tmp_path / "dedup"
    (out / "clusters").mkdir(parents=True)
    (out / "stats.json").write_text(json.dumps({"input": 2, "kept": 1, "quarantined": 0,
                                                "cluster_size_histogram": {"2": 1}}))
    (out / "run.json").write_text(json.dumps({"job": "dedup", "inputs": {"": str(local)}}))
    pq.write_table(pa.table({"id": ["h", "row-7"], "cluster_id": ["h", "h"], "cluster_size": [2, 2],
                             "kept": [True, False], "source": ["", ""]}), out / "clusters" / "part-0.parquet")
    owned(out, ["stats.json", "clusters", "run.json"])
    assert main([str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "4111 1111" not in html and FLAG in html
    assert main([str(out), "--read-outside", "true"]) == 0 and "4111 1111" in (out / "report.html").read_text()


def test_a_pipeline_stage_folder_is_a_path_never_a_list_of_inputs(tmp_path, monkeypatch):
    """Found by a review: a source folder named "x,victim" made its input "OUT/dedup/docs/source=x,victim",
    split on the comma as --input is: "victim", under the reader's working folder, was read."""
    victim = tmp_path / "victim"
    victim.mkdir()
    pq.write_table(pa.table({"id": ["row-7"], "text": [PRIVATE]}), victim / "part-0.parquet")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    (out / "dedup" / "docs").mkdir(parents=True)
    (out / "dedup" / "stats.json").write_text(json.dumps({"input": 1, "kept": 1, "quarantined": 0,
                                                         "cluster_size_histogram": {}}))
    source = out / "decontaminate" / "x,victim"
    (source / "matches").mkdir(parents=True)
    (source / "stats.json").write_text(json.dumps({"input": 1, "kept": 1, "benchmarks": {"b": {"items": 1}}}))
    pq.write_table(pa.table({"id": ["row-7"], "benchmark": ["b"], "item": ["i"], "start": [0], "end": [7],
                             "score": [1.0], "kind": ["exact"]}), source / "matches" / "part-0.parquet")
    owned(out, ["dedup", "decontaminate"])
    assert "4111 1111" not in write_report(out).read_text()
    run = Run.of(out, ReportConfig(read_outside=True))  # nor when told to read outside: it is no input named
    assert [run.input_files(stage) for stage in run.stages] == [[], []]


def test_read_outside_is_true_or_false_and_the_counts_whole_numbers():
    assert ReportConfig(read_outside=True).read_outside and not ReportConfig().read_outside
    for wrong in ({"read_outside": 1}, {"read_outside": "yes"}, {"max_reasons": True}, {"max_reasons": -1}):
        with pytest.raises(ValueError):
            ReportConfig(**wrong)


def test_seconds_past_a_float_in_run_json_are_passed_over(tmp_path):
    """Found by a review: a 400-digit integer as run.json's seconds, or a stage's stage_seconds, was an
    OverflowError and no report."""
    def untimed(folder):  # a stage that records no seconds of its own: the run's are shown
        stats = json.loads((folder / "stats.json").read_text())
        (folder / "stats.json").write_text(json.dumps({k: v for k, v in stats.items() if k != "seconds"}))
        return folder

    out = untimed(clean_output(tmp_path / "job", 40))
    (out / "run.json").write_text(json.dumps({"job": "clean", "seconds": 10 ** 400}))
    assert "Clean" in write_report(out).read_text()
    pipeline = tmp_path / "pipeline"
    untimed(clean_output(pipeline / "clean", 40))
    (pipeline / "run.json").write_text(json.dumps({"job": "pipeline", "stage_seconds": {"clean": 10 ** 400}}))
    owned(pipeline, ["clean", "run.json"])
    assert "Clean" in write_report(pipeline).read_text()


def classifier_output(folder, labels: dict, confusion: dict | None = None):
    folder.mkdir(parents=True)
    held = {"labels": labels, "documents": 3, **({"confusion": confusion} if confusion else {})}
    (folder / "report.json").write_text(json.dumps({"labels": list(labels), "heldout": held}))
    return owned(folder, ["report.json"])


def test_score_histograms_hold_whole_numbers_or_are_left_out(tmp_path):
    """Found by a review: a text, a list or two integers of 4,299 digits in a score histogram failed the page
    where the series were summed (no report, a traceback)."""
    histogram = {"hq": [1, "2", 3], "lq": [[1], 0, 0], "big": [10 ** 4299, 10 ** 4299, 0], "ok": [4, 5, 6]}
    out = classifier_output(tmp_path / "classifier", {"hq": {"documents": 3, "score_histogram": histogram}})
    page = read_page(write_report(out).read_text())
    assert "Score of hq, by true label" in page.text and "ok (15)" in page.text
    assert "big (" not in page.text and "lq (" not in page.text


def test_a_value_no_gatherer_checked_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import report.write

    def broken(_view):
        raise OverflowError("int too large to convert to float")

    out = clean_output(tmp_path / "out", 40)
    monkeypatch.setattr(report.write, "report_page", broken)
    assert main([str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "OverflowError" in error[0] and str(out) in error[0]


def test_one_odd_value_costs_that_value_not_its_stage(tmp_path):
    """Found by a review: "quarantined": "3", reasons as a list, a text that is not UTF-8, num_perm "x" or a
    seed that is a list hid the whole stage behind "not as tokenmill writes them"."""
    out = clean_output(tmp_path / "clean", 40, reasons=1)
    stats = json.loads((out / "stats.json").read_text())
    (out / "stats.json").write_text(json.dumps({**stats, "quarantined": "3", "file_errors": 5}))
    bad = pa.array([b"ok \xff\xfe bytes", b"fine"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"id": ["u1", "u2"], "text": bad, "lang": ["en", "en"], "source": ["s", "s"],
                             "metadata": pa.array([None, None], pa.string())}), out / "docs" / "part-00009.parquet")
    html = write_report(out, ReportConfig(kept_examples=100)).read_text()
    assert "not as tokenmill writes them" not in html and "rule:" in html and "ok \ufffd\ufffd bytes" in html
    (out / "stats.json").write_text(json.dumps({**stats, "rejected_by_reason": ["rule:a"]}))
    assert "not as tokenmill writes them" not in write_report(out).read_text()

    (tmp_path / "in").mkdir()
    dedup = dedup_output(tmp_path / "dedup", tmp_path / "in")
    stats = json.loads((dedup / "stats.json").read_text())
    (dedup / "stats.json").write_text(json.dumps({**stats, "num_perm": "x", "ngram": [5]}))
    (dedup / "settings.yaml").write_text("minhash:\n  seed: [1]\n")
    html = write_report(dedup).read_text()
    assert "not as tokenmill writes them" not in html and "Cluster of 2" in html


def test_a_damaged_stats_json_or_part_file_is_named(tmp_path, capsys):
    """Found by a review: a stats.json cut short was "holds no tokenmill output", and one part file cut short
    hid the whole stage behind an ArrowInvalid that named no file."""
    out = clean_output(tmp_path / "cut", 40)
    text = (out / "stats.json").read_text()
    (out / "stats.json").write_text(text[:len(text) // 2])
    with pytest.raises(LayoutError, match="stats.json is damaged \\(cut short or not JSON"):
        stage_dirs(out)
    assert main([str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and f"{out}/stats.json is damaged" in error[0]
    (out / "stats.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(LayoutError, match="stats.json is damaged \\(nested deeper"):
        stage_dirs(out)

    out = clean_output(tmp_path / "part", 80, reasons=1, files=2)
    part = out / "rejected" / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[:200])
    page = read_page(write_report(out).read_text())
    assert "not as tokenmill writes them" not in page.text
    assert "rejected/part-00000.parquet is damaged (ArrowInvalid" in page.text
    assert page.by_class["doc-id"]  # the other file's documents, shown

    pipeline = tmp_path / "pipeline"
    clean_output(pipeline / "clean", 40)
    (pipeline / "clean" / "stats.json").write_text("{")
    owned(pipeline, ["clean"])
    assert "clean/stats.json is damaged (cut short or not JSON" in read_page(write_report(pipeline).read_text()).text


def test_a_run_of_an_older_layout_is_compared_with_what_it_has(tmp_path):
    """Found by a review: rejected/ without a reason column, or dedup's clusters/ without kept, made --compare
    fail whole with a KeyError."""
    a, b = clean_output(tmp_path / "a", 16, reasons=1, files=1), clean_output(tmp_path / "b", 16, reasons=1, files=1)
    part = b / "rejected" / "part-00000.parquet"
    pq.write_table(pq.read_table(part).drop_columns(["reason"]), part)
    _, _, stages, _ = compare(a, b, ReportConfig())
    assert [(c.before, c.after, c.count) for c in stages[0].changes] == [(f"rejected: rule:{MARKUP}0",
                                                                         "rejected: (no reason)", 8)]
    assert any("no reason column" in note for note in stages[0].notes)
    assert main([str(a), "--compare", str(b)]) == 0
    assert "no reason column" in (a / "compare.html").read_text()

    (tmp_path / "in").mkdir()
    plain = dedup_output(tmp_path / "plain", tmp_path / "in")
    older = dedup_output(tmp_path / "older", tmp_path / "in")
    part = older / "clusters" / "part-00000.parquet"
    pq.write_table(pq.read_table(part).drop_columns(["kept"]), part)
    _, _, stages, _ = compare(plain, older, ReportConfig())
    assert any("no id or kept column" in note for note in stages[0].notes)


def test_tables_of_a_row_per_entry_are_capped_with_the_rest_counted(tmp_path):
    """Found by a review: 300,000 benchmarks in stats.json made a page of 33 MB; 3,000 sources of a dedup or a
    mixture a row each."""
    cfg = ReportConfig()
    out = decontaminate_output(tmp_path / "decontaminate", tmp_path / "items.txt")
    stats = json.loads((out / "stats.json").read_text())
    stats["benchmarks"] = {f"b{i}": {"items": i} for i in range(5_000)}
    (out / "stats.json").write_text(json.dumps(stats))
    html = write_report(out).read_text()
    rows = table_rows(html, "Benchmarks")
    assert len(rows) == cfg.max_reasons + 1 and rows[-1][0] == f"{5_000 - cfg.max_reasons:,} other benchmarks"

    out = clean_output(tmp_path / "dedup-input", 8)  # any folder: the dedup stats below make it a dedup output
    (out / "stats.json").write_text(json.dumps({"input": 3_000, "kept": 3_000, "quarantined": 0, "scope": "global",
                                                "cluster_size_histogram": {}, "sources": {
                                                    f"s{i}": {"input": 1, "kept": 1, "quarantined": 0}
                                                    for i in range(3_000)}}))
    html = write_report(out).read_text()
    assert len(table_rows(html, "Sources (deduplicated global)")) == cfg.max_reasons + 1
    funnel = [r for r in table_rows(html, "Documents, text and tokens through each stage") if r[0] == "Dedup"]
    assert len(funnel) == cfg.max_reasons + 2  # and the rest in one row, and the total
    assert funnel[-2][1:3] == [f"{3_000 - cfg.max_reasons:,} other sources", f"{3_000 - cfg.max_reasons:,}"]

    run = tmp_path / "mixture"
    (run / "shards" / "web").mkdir(parents=True)
    (run / "shards" / "web" / "index.json").write_text("{}")
    sources = {f"s{i}": {"weight": 1} for i in range(3_000)}
    (run / "shards" / "mixture.json").write_text(json.dumps({"sources": sources}))
    owned(run, ["shards"])
    rows = table_rows(write_report(run).read_text(), "mixture.json")
    assert len(rows) == cfg.max_reasons + 1 and rows[-1][0] == f"{3_000 - cfg.max_reasons:,} other sources"


def test_a_classifiers_labels_and_bins_are_capped(tmp_path):
    """Found by a review: 400 labels (a histogram each, by true label, and the confusion matrix) made a page of
    164 MB, a histogram of 400,000 bins one of 72 MB."""
    cfg = ReportConfig()
    names = [f"label{i}" for i in range(150)]
    labels = {name: {"documents": 1, "score_histogram": {other: [1] * 10 for other in names}} for name in names}
    confusion = {"rows_true_columns_predicted": names, "matrix": [[1] * len(names)] * len(names)}
    html = write_report(classifier_output(tmp_path / "classifier", labels, confusion)).read_text()
    assert len(html) < 2_000_000  # 25 MB before
    assert len(table_rows(html, "Held-out documents, per label")) == cfg.max_reasons + 1
    assert "Confusion" not in html and html.count("by true label") == cfg.max_reasons  # past DETAILED_LABELS
    few = {name: {"documents": 1, "score_histogram": {"label0": [1] * 20_000, "label1": [1] * 10,
                                                       "label2": [2] * 10}} for name in names[:3]}
    html = write_report(classifier_output(tmp_path / "few", few, {
        "rows_true_columns_predicted": names[:3], "matrix": [[1, 2, 3]] * 3})).read_text()
    # the series of 20,000 bins left out (the histograms had that many bins), the others shown
    assert "Confusion" in html and html.count("by true label") == 3 and len(html) < 300_000


def test_a_documents_cuts_are_computed_once_whatever_its_spans_shown(tmp_path, monkeypatch):
    """Found by a review: the cuts of a document were computed again over all its spans for each of its spans
    shown (up to 90): a document of 120,000 spans took 26 s."""
    import report.stages.decontaminate as decontaminate

    out = tmp_path / "run"
    (out / "dedup" / "docs").mkdir(parents=True)
    (out / "dedup" / "stats.json").write_text(json.dumps({"input": 1, "kept": 1, "quarantined": 0,
                                                         "cluster_size_histogram": {}}))
    pq.write_table(pa.table({"id": ["d1"], "text": ["word " * 20_000]}), out / "dedup" / "docs" / "part-0.parquet")
    (out / "decontaminate" / "matches").mkdir(parents=True)
    (out / "decontaminate" / "stats.json").write_text(json.dumps({"input": 1, "kept": 1, "benchmarks": {}}))
    spans = 1_000
    pq.write_table(pa.table({"id": ["d1"] * spans, "benchmark": ["b"] * spans, "item": [f"i{k % 30}" for k in
                                                                                          range(spans)],
                             "start": [50 * k for k in range(spans)], "end": [50 * k + 20 for k in range(spans)],
                             "score": [1.0] * spans, "kind": ["exact"] * spans}),
                   out / "decontaminate" / "matches" / "part-0.parquet")
    owned(out, ["dedup", "decontaminate"])
    calls = []

    def counted(text, found, window):
        calls.append(len(found))
        return cut_ranges(text, found, window)

    monkeypatch.setattr(decontaminate, "cut_ranges", counted)
    page = read_page(write_report(out).read_text())
    assert calls == [spans]  # once, over all of them
    assert len(page.by_class["item"]) == 30  # 30 items, 3 spans of each shown


def test_a_shards_index_of_odd_numbers_costs_those_numbers_not_the_stage(tmp_path):
    """Found by the second review (2026-12-07): the shards stage took True for a count and a shard whose
    real_tokens was text failed its fill chart."""
    run = tmp_path / "run"
    (run / "shards").mkdir(parents=True)
    (run / "shards" / "index.json").write_text(json.dumps({
        "totals": {"documents": True, "quarantined": -3, "real_tokens": 10},
        "shards": [{"file": "a.arrow", "tokens": 128, "real_tokens": "x"},
                   {"file": "b.arrow", "tokens": 128, "real_tokens": 64}]}))
    owned(run, ["shards"])
    html = write_report(run).read_text()
    assert "not as tokenmill writes them" not in html and "b.arrow" in html and "a.arrow" not in html


def test_links_and_fifos_in_a_folder_from_elsewhere_are_not_read(tmp_path):
    """Found by the third review (2026-12-07): an output folder linked to the reader's own Parquet files put
    their text into the page, and a FIFO at heldout/index.json hung the report for ever."""
    private = tmp_path / "home" / "private"
    private.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["row-7"], "text": [PRIVATE], "lang": ["en"]}), private / "part-00000.parquet")
    out = clean_output(tmp_path / "clean", 8)
    for part in (out / "docs").iterdir():
        part.unlink()
    (out / "docs").rmdir()
    (out / "docs").symlink_to(private)
    assert "4111" not in write_report(out).read_text()

    run = tmp_path / "pipeline"
    run.mkdir()
    (run / "clean").symlink_to(clean_output(tmp_path / "elsewhere", 8))  # a stage folder linked out of the run
    shards = run / "shards"
    (shards / HELDOUT).mkdir(parents=True)
    (shards / "index.json").write_text(json.dumps({"totals": {"documents": 3, "rows": 1, "tokens": 128}}))
    os.mkfifo(shards / HELDOUT / "index.json")
    owned(run, ["clean", "shards"])
    done = subprocess.run([sys.executable, "-m", "jobs.report", str(run)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    page = read_page((run / "report.html").read_text())
    assert "elsewhere" not in page.text and "Shards" in page.text

    # shards hold no text the page shows: a mixture's source linked to shards kept elsewhere, and an index.json
    # that is a link (a hub snapshot's files are), are read (found by the day's second review)
    kept = tmp_path / "store" / "web"
    kept.mkdir(parents=True)
    (tmp_path / "store" / "index.blob").write_text(json.dumps({"totals": {"documents": 7, "rows": 2, "tokens": 256}}))
    (kept / "index.json").symlink_to(tmp_path / "store" / "index.blob")
    mixture = tmp_path / "mixture"
    mixture.mkdir()
    (mixture / "web").symlink_to(kept)
    (mixture / "mixture.json").write_text(json.dumps({"sources": {"web": {"weight": 1}}}))
    owned(mixture, ["web", "mixture.json"])
    assert table_rows(write_report(mixture).read_text(), "Shards")[0][:2] == ["documents", "7"]


def test_reasons_not_listed_hold_no_examples():
    """Found by the third review: a heap and an example per distinct reason read (400,000 reasons from
    elsewhere: 700 MB), of which the page lists cfg.max_reasons."""
    cfg = ReportConfig(max_reasons=5)
    counts = {f"rule:{i}": 1_000 - i for i in range(1_000)}
    sample = reason_sample(counts, cfg, lambda row: row["id"])
    reasons = [f"rule:{i}" for i in range(1_000)]
    sample.offer(pa.table({"id": [f"d{i}" for i in range(1_000)], "reason": reasons}), reasons)
    assert sorted(sample.heaps) == [f"rule:{i}" for i in range(5)] and sample.get("rule:0") == ["d0"]


def test_values_from_elsewhere_are_bounded_in_the_page_and_in_depth(tmp_path):
    """Found by the third review: a value nested 980 deep left no report at all (RecursionError where it was
    shown); a 20 MB string, 200,000 cluster sizes, 5,000 kinds of text, a benchmark's name or a span's kind of
    1 MB each went into the page whole."""
    (tmp_path / "in").mkdir()
    dedup = dedup_output(tmp_path / "dedup", tmp_path / "in")
    stats = json.loads((dedup / "stats.json").read_text())
    stats.update(bands="b" * 2_000_000,
                 cluster_size_histogram={str(size): 1 for size in range(2, 20_000)})
    (dedup / "stats.json").write_text(json.dumps(stats))
    html = write_report(dedup).read_text()
    assert len(html) < 300_000 and "not as tokenmill writes them" not in html and "Cluster of 2" in html

    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    kinds = {"k" * 1_000_000: {"bytes_per_token": 4.0}, **{f"kind{i}": {"bytes_per_token": 4.0} for i in range(5_000)}}
    (tokenizer / "report.json").write_text(json.dumps({"algorithm": "a" * 2_000_000, "vocab_size": 256,
                                                       "held_out": {"trained": kinds}}))
    owned(tokenizer, ["report.json"])
    html = write_report(tokenizer).read_text()
    assert len(html) < 300_000 and len(table_rows(html, "Held-out documents")) == ReportConfig().max_reasons + 1

    out = decontaminate_output(tmp_path / "decontaminate", tmp_path / "items.txt")
    part = out / "matches" / "part-0.parquet"
    pq.write_table(pq.read_table(part).drop_columns(["benchmark", "kind"]).append_column(
        "benchmark", pa.array(["b" * 1_000_000])).append_column("kind", pa.array(["k" * 1_000_000])), part)
    html = write_report(out).read_text()
    assert len(html) < 300_000 and "bbbbbbbbbb" in html

    nested: list = []
    for _ in range(sys.getrecursionlimit() + 100):  # as deep as json reads, and deeper than str() can go
        nested = [nested]
    assert number(nested) == "[[[[...]]]]" and number({"a": nested}) == "a: [[[[...]]]]"


def test_damaged_files_are_named_to_a_bound_and_the_rest_counted(tmp_path):
    """Found by the third review: 20,000 empty part files from elsewhere made 6.8 MB of notes, one each."""
    out = clean_output(tmp_path / "clean", 8)
    for i in range(30):
        (out / "docs" / f"part-9{i:04d}.parquet").write_bytes(b"")
    page = read_page(write_report(out).read_text())
    assert page.text.count("is damaged") == MAX_DAMAGED_NAMED and "20 other damaged files of kept" in page.text


def test_a_value_of_the_wrong_type_costs_that_value_in_every_stage(tmp_path):
    """Found by the third review: extract's "templates": [1] or a bytes_in past a float, the tokenizer's
    "held_out": [1], and a dedup clusters/ of an older layout (no kept) each hid their whole stage."""
    extract = tmp_path / "extract"
    extract.mkdir()
    (extract / "stats.json").write_text(json.dumps({"templates": [1], "records": 3, "written": 2,
                                                    "bytes_in": 10**400, "bytes_out": 10**400}))
    owned(extract, ["stats.json"])
    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    (tokenizer / "report.json").write_text(json.dumps({"algorithm": "bpe", "held_out": [1],
                                                       "peak_memory_bytes": 10**400}))
    owned(tokenizer, ["report.json"])
    (tmp_path / "in").mkdir()
    dedup = dedup_output(tmp_path / "dedup", tmp_path / "in")
    part = next((dedup / "clusters").glob("part-*.parquet"))
    pq.write_table(pq.read_table(part).drop_columns(["kept"]), part)
    for out in (extract, tokenizer, dedup):
        assert "not as tokenmill writes them" not in write_report(out).read_text(), out.name
