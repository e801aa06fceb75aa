"""The report each job and the pipeline write (spark_stages/runner.py), read back as a parser reads it and
checked against the outputs: the funnel's counts, the sample's ids, the spans where the matches say, the
largest cluster, a comparison's changes; hostile documents as text; the run's settings beside it; a report
that fails costs the job nothing; `jobs.report` with the command line of every job."""

import json
import re
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import report
from prep.cli import command_line
from prep.dedup.shingles import normalize_bytes
from prep.normalize import MAX_CHANGES
from report.cli import main
from report.config import ReportConfig
from report.scan import id_hash
from report.stages.clean import visible
from spark_stages import clean, pipeline
from spark_stages.runner import run_stage
from tests.report import corpus
from tests.report.expected import clean_fates, rows, sample_by_reason, stats
from tests.report.page import read_page, table_rows
from tests.spark_stages.conftest import spark_submit

pytestmark = pytest.mark.spark
FUNNEL = "Documents, text and tokens through each stage"
# What a report is made of; anything else (img, iframe, a, object, style in the body...) came from a document.
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "div", "span",
                "b", "nav", "a", "button", "main", "section", "table", "thead", "tbody", "tr", "th", "td", "p",
                "details", "summary", "code", "pre", "mark", "small", "svg", "rect", "text", "line", "script"}


def html_of(folder) -> str:
    return (folder / "report.html").read_text(encoding="utf-8")


def written(folder) -> set[str]:
    return set(json.loads((folder / ".tokenmill").read_text())["written"])


def reason_blocks(html: str) -> dict[str, tuple[str, list[str]]]:
    """{reason: (its count as shown, the ids of its examples)} of a report's reasons."""
    found = {}
    for chunk in html.split('<details class="reason">')[1:]:
        page = read_page(chunk.split("</details>", 1)[0])
        found[page.by_class["name"][0]] = (page.by_class["count"][0], page.by_class["doc-id"])
    return found


def test_every_job_and_the_pipeline_write_their_report_and_what_ran(pipeline_run, clean_runs):
    for out in (pipeline_run, *clean_runs):
        assert {"report.html", "settings.yaml", "run.json"} <= written(out)
    run = json.loads((pipeline_run / "run.json").read_text())
    assert run["job"] == "pipeline" and set(run["inputs"]) == {"web", "docs"}
    settings = str(pipeline_run / "settings.yaml")  # the settings as they ran: --config runs them again
    _, cfg = command_line(pipeline.Config, ["--config", settings], prog="t", description="t")
    assert set(cfg.decontaminate.benchmarks) == {"ref"} and cfg.tokenizer.vocab_size == 1024
    _, strict = command_line(clean.Config, ["--config", str(clean_runs[1] / "settings.yaml")], prog="t",
                             description="t")
    assert strict.en.gopher_quality.min_doc_words == 400
    assert "settings that ran" in html_of(pipeline_run).lower() and "min_doc_words: 400" in html_of(clean_runs[1])


def test_the_pipeline_extracts_a_source_of_warc_files_first(pipeline_run):
    assert stats(pipeline_run / "extract" / "web")["written"] == corpus.CRAWL_ARTICLES + 1
    assert not (pipeline_run / "extract" / "docs").exists()  # a source of documents is not extracted
    assert stats(pipeline_run / "clean" / "web")["input"] == corpus.CRAWL_ARTICLES + 1
    assert list(json.loads((pipeline_run / "shards" / "mixture.json").read_text())["sources"]) == ["web", "docs"]
    assert "extract:" in (pipeline_run.parent / "stdout.txt").read_text()


def test_the_funnel_holds_every_stage_and_source_as_its_outputs_count_them(pipeline_run):
    shown = {(r[0], r[1]): r[2:6] for r in table_rows(html_of(pipeline_run), FUNNEL)}

    def cells(*values):
        return ["—" if v is None else f"{v:,}" for v in values]

    for name in ("web", "docs"):
        s = stats(pipeline_run / "clean" / name)
        assert shown[("Clean", name)] == cells(s["input"], s["kept"], s["rejected"], s["quarantined"])
        s = stats(pipeline_run / "decontaminate" / name)
        assert shown[("Decontaminate", name)] == cells(s["input"], s["kept"], s["dropped"], s["quarantined"])
        index = json.loads((pipeline_run / "shards" / name / "index.json").read_text())
        held = json.loads((pipeline_run / "shards" / name / "heldout" / "index.json").read_text())
        documents = index["totals"]["documents"]
        row = next(r for r in table_rows(html_of(pipeline_run), FUNNEL) if r[:2] == ["Shards", name])
        assert row[2:4] == cells(documents + held["totals"]["documents"], documents)
        assert row[8] == f"{index['totals']['real_tokens']:,}"
        timed = json.loads((pipeline_run / "run.json").read_text())["stage_seconds"][f"shards/{name}"]
        # the shards timed by the pipeline, in run.json (shown to four significant digits)
        assert timed > 0 and float(row[-1].replace(",", "")) == pytest.approx(timed, rel=1e-3, abs=0.05)
        dedup = stats(pipeline_run / "dedup")["sources"][name]
        assert shown[("Dedup", name)][:2] == cells(dedup["input"], dedup["kept"])
    s = stats(pipeline_run / "extract" / "web")
    pages = s["records"] - sum(s["skipped"].get(kind, 0) for kind in ("warcinfo", "request", "metadata"))
    assert s["skipped"].get("request") and pages < s["records"]  # the crawl's requests are no input lost
    assert shown[("Extract", "web")][:3] == cells(pages, s["written"], pages - s["written"] - s["quarantined"])
    s = stats(pipeline_run / "dedup")
    assert shown[("Dedup", "all sources")] == cells(s["input"], s["kept"], s["exact_duplicates"] +
                                                    s["near_duplicates"], s["quarantined"])


def test_each_reason_shows_its_count_and_the_documents_of_the_smallest_id_hashes(clean_runs):
    for out in clean_runs:
        blocks = reason_blocks(html_of(out))
        counts = stats(out)["rejected_by_reason"]
        assert {reason: count for reason, (count, _) in blocks.items()} == {r: f"{n:,}" for r, n in counts.items()}
        expected = sample_by_reason(out / "rejected", ReportConfig().examples_per_reason)
        assert {reason: ids for reason, (_, ids) in blocks.items()} == expected


def test_hostile_documents_are_shown_as_text_and_nothing_of_them_is_markup(clean_runs, pipeline_run, tmp_path):
    every = tmp_path / "every.html"  # every document of the run shown
    report.write_report(clean_runs[0], ReportConfig(examples_per_reason=100, kept_examples=100),
                        destination=every)
    for html in (every.read_text(), html_of(clean_runs[0]), html_of(pipeline_run)):
        page = read_page(html)
        assert {tag for tag, _ in page.tags} <= ALLOWED_TAGS
        assert [tag for tag, _ in page.tags].count("script") == 1 and [t for t, _ in page.tags].count("style") == 1
        for tag, attributes in page.tags:
            assert not [name for name in attributes if name.startswith("on")], tag
            assert not any("javascript:" in (value or "") for value in attributes.values()), tag
            if tag == "a":
                assert re.fullmatch(r"#\w+", attributes["href"])
    text = read_page(every.read_text()).text
    for doc in corpus.HOSTILE[:5]:
        assert doc["text"][:45] in text, doc["id"]  # shown as the text it is
    assert all(doc["id"] in text for doc in corpus.HOSTILE)
    assert corpus.NOT_JSON in text  # the quarantined record's bytes


def test_matched_spans_are_marked_where_the_matches_say_beside_their_items(pipeline_run):
    html = html_of(pipeline_run)
    matches = rows(pipeline_run / "decontaminate" / "docs" / "matches", ["id", "start", "end", "item"])
    before = {r["id"]: r["text"] for r in rows(pipeline_run / "dedup" / "docs" / "source=docs", ["id", "text"])}
    assert len(matches) == 5
    marked = [m for m in read_page(html).by_class["span"] if m != "matched span"]  # but the legend's
    assert sorted(marked) == sorted(before[m["id"]][m["start"]:m["end"]] for m in matches)
    text = read_page(html).text
    assert all(" ".join(item.split()) in " ".join(text.split()) for item in corpus.items())
    assert len(read_page(html).by_class["window"]) >= len(matches)  # the window cut with each span


def test_clusters_show_the_largest_first_its_survivor_beside_its_members(pipeline_run):
    clusters = rows(pipeline_run / "dedup" / "clusters", ["id", "cluster_id", "cluster_size", "kept"])
    largest = max(r["cluster_size"] for r in clusters)
    html = html_of(pipeline_run)
    first = html.split('<details class="cluster"', 1)[1].split(">", 1)[1].split("</details>", 1)[0]
    page = read_page(first)
    assert page.text.startswith(f"Cluster of {largest} (largest)")
    survivor, *members = page.by_class["doc-id"]
    heads = {r["cluster_id"] for r in clusters if r["cluster_size"] == largest}
    assert survivor in heads and all(r["kept"] == (r["id"] == survivor) for r in clusters
                                     if r["cluster_id"] == survivor)
    assert set(members) <= {r["id"] for r in clusters if r["cluster_id"] == survivor and not r["kept"]}
    texts = {r["id"]: r["text"] for name in ("web", "docs")  # dedup's input
             for r in rows(pipeline_run / "clean" / name / "docs", ["id", "text"])}
    heads = page.by_class["head"][1:]  # the survivor's first
    assert members and len(heads) == len(members)
    for member, head in zip(members, heads):  # exact duplicates told apart from near ones, as dedup tells them
        exact = normalize_bytes(texts[member]) == normalize_bytes(texts[survivor])
        assert ("an exact duplicate" in head) == exact and ("a near duplicate, similarity" in head) == (not exact)


def test_the_paragraphs_shared_by_many_documents_are_listed_with_their_counts(pipeline_run):
    step = stats(pipeline_run / "dedup")["paragraphs"]
    html = html_of(pipeline_run)
    facts = dict(table_rows(html, "Paragraphs shared by many documents"))
    assert facts["shared units"] == f"{step['shared_units']:,}"
    assert facts["units removed"] == f"{step['units_removed']:,}"
    shared = rows(pipeline_run / "dedup" / "paragraphs", ["documents", "text"])
    shown = table_rows(html, "The most shared, kept in the first document only")
    assert len(shown) == len(shared) and shown[0][0] == f"{max(r['documents'] for r in shared):,}"


def test_the_template_lines_cut_are_listed_with_the_pages_they_were_cut_from(pipeline_run):
    extract = pipeline_run / "extract" / "web"
    cut = Counter()
    for row in rows(extract / "templates", ["host", "line", "pages"]):
        cut[row["host"], row["line"]] += row["pages"]
    assert cut and sum(cut.values()) == stats(extract)["templates"]["lines_removed"]
    shown = table_rows(html_of(pipeline_run), "docs.example.org")  # the crawl's one site
    assert sorted((line, int(pages)) for line, pages in shown) == sorted(
        (line, pages) for (_, line), pages in cut.items())
    assert all(int(pages) >= 5 for _, pages in shown)  # templates.min_pages


def test_what_normalization_changed_is_shown_in_place_for_the_documents_of_the_smallest_id_hashes(clean_runs):
    written = rows(clean_runs[1] / "normalized", ["id", "at", "before", "after", "left", "right"])
    shown = table_rows(html_of(clean_runs[1]), "Changes in a sample of the documents")
    assert written and 0 < len(shown) <= ReportConfig().kept_examples * MAX_CHANGES
    ids = list(dict.fromkeys(doc_id for doc_id, _, _ in shown))
    assert ids == sorted({row["id"] for row in written}, key=lambda doc_id: (id_hash(doc_id), doc_id))[:len(ids)]
    expected = [[row["id"], f"{visible(row['left'])} ⟦{visible(row['before'])}⟧ {visible(row['right'])}",
                 visible(row["after"]) or "(removed)"]
                for doc_id in ids for row in sorted((r for r in written if r["id"] == doc_id), key=lambda r: r["at"])]
    assert len(ids) == min(ReportConfig().kept_examples, len({row["id"] for row in written}))
    assert shown == expected  # each change as written, in its place, in the order of its text
    assert any(sign in place for _, place, _ in shown for sign in "·⏎")  # white space made visible


def test_a_comparison_counts_the_documents_whose_fate_differs_by_the_change(clean_runs):
    first, second = clean_runs
    assert main([str(first), "--compare", str(second)]) == 0
    assert "compare.html" in written(first)
    html = (first / "compare.html").read_text()
    a, b = clean_fates(first), clean_fates(second)
    expected = Counter((a[i], b[i]) for i in a.keys() & b.keys() if a[i] != b[i])
    assert ("kept", "rejected: gopher_quality:min_doc_words") in expected
    shown = {(before, after): int(count.replace(",", "")) for before, after, count in
             table_rows(html, "Changes of fate")}
    assert shown == dict(expected)
    pairs = read_page(html).by_class["pair"]
    assert pairs and len(pairs) <= sum(min(n, ReportConfig().compare_examples) for n in expected.values())


def test_a_run_compared_with_itself_changes_nothing_at_any_stage(pipeline_run, tmp_path):
    html = report.write_comparison(pipeline_run, pipeline_run, destination=tmp_path / "same.html").read_text()
    compared = dict(re.findall(r"<h2>([\w/]+)<small>  ([\d,]+) documents reached this stage", html))
    expected = {}
    for name in ("web", "docs"):
        s = stats(pipeline_run / "clean" / name)
        expected[f"clean/{name}"] = s["kept"] + s["rejected"]
        expected[f"decontaminate/{name}"] = stats(pipeline_run / "decontaminate" / name)["input"]
    expected["extract/web"] = stats(pipeline_run / "extract" / "web")["written"]
    expected["dedup"] = stats(pipeline_run / "dedup")["input"]
    assert {key: int(n.replace(",", "")) for key, n in compared.items()} == expected
    assert html.count("No document fared otherwise.") == len(expected)


def test_jobs_report_takes_the_command_line_of_every_job(clean_runs, tmp_path, capsys):
    assert main(["--help"]) == 0 and "--compare" in capsys.readouterr().out
    assert main(["--print-config"]) == 0 and "read_bytes:" in capsys.readouterr().out
    assert main([str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "holds no tokenmill output" in error[0]
    assert main([str(clean_runs[0]), "--examples-per-reason", "-1"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    other = tmp_path / "fewer.html"
    assert main([str(clean_runs[0]), "--output", str(other), "--examples-per-reason", "1", "--kept-examples", "0"]) == 0
    assert {reason: ids for reason, (_, ids) in reason_blocks(other.read_text()).items()} == sample_by_reason(
        clean_runs[0] / "rejected", 1)
    done = spark_submit("report", str(clean_runs[0]), "--output", str(tmp_path / "submitted.html"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "submitted.html").read_text().startswith("<!DOCTYPE html>")


def test_a_report_that_cannot_be_written_leaves_the_job_done(spark, inputs, tmp_path, monkeypatch, capfd):
    del spark

    def broken(*_args, **_kwargs):
        raise RuntimeError("no report today")

    monkeypatch.setattr(report, "write_report", broken)
    out = tmp_path / "out"
    assert run_stage(clean.STAGE, ["--input", str(inputs["docs"] / "hostile.jsonl"), "--output", str(out)]) == 0
    assert (out / "stats.json").is_file() and not (out / "report.html").exists()
    warning = [line for line in capfd.readouterr().err.splitlines() if "WARNING" in line]
    assert len(warning) == 1 and "no report today" in warning[0] and "outputs are complete" in warning[0]
    assert stats(out)["input"] == len(corpus.HOSTILE) + 1  # and the line that is not JSON


def test_a_removed_invisible_character_is_shown_by_its_code_point():
    # what normalization removes (a soft hyphen, a word joiner, a zero-width space) would show as nothing
    assert visible("Mit\u00adtel\u2060al\u200bter\xa0x") == "Mit<U+00AD>tel<U+2060>al<U+200B>ter⍽x"


def test_a_stage_whose_outputs_were_edited_is_named_and_the_other_stages_are_shown(pipeline_run, tmp_path):
    """An output folder can come from elsewhere: counts of the wrong type in one stage's stats.json (a
    division by a string was a traceback and no report) cost that stage's view, not the report."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(pipeline_run, copy, ignore=shutil.ignore_patterns("report.html"))
    (copy / "clean" / "web" / "stats.json").write_text(json.dumps(
        {"input": "many", "kept": [1], "rejected": {"a": 1}, "rejected_by_reason": {"x": "y"}}))
    (copy / "extract" / "web" / "stats.json").write_text(json.dumps(
        {"records": 10, "skipped": {"request": "a"}, "written": 5, "templates": [1]}))  # each costs its value
    for part in (copy / "extract" / "web" / "docs").glob("part-*.parquet"):  # what the gatherer cannot read
        pq.write_table(pa.table({"id": ["x"], "text": pa.array([[1, 2]])}), part)
    (copy / "dedup" / "stats.json").write_text("[" * 100_000 + "]" * 100_000)  # past Python's recursion limit
    assert main([str(copy)]) == 0
    html = html_of(copy)
    assert "The outputs of extract/web are not as tokenmill writes them" in html
    shown = {(r[0], r[1]): r[2:6] for r in table_rows(html, FUNNEL)}
    assert {("Clean", "docs"), ("Decontaminate", "web"), ("Shards", "web")} <= set(shown)
    assert ("Extract", "web") not in shown
    assert shown[("Quality classifier", "web")] == ["—"] * 4  # told by its keys; no count of another type shown
    assert shown[("Dedup", "")] == ["—"] * 4  # its stats.json unreadable: the stage is still there


def test_an_output_folder_from_elsewhere_cannot_make_the_report_write_or_read_outside_it(pipeline_run, tmp_path):
    """Found by trying: the report's temporary planted as a link overwrote the file it pointed to;
    settings.yaml linked to a file outside put that file in the report; a FIFO named as a part file made the
    report wait for ever; a 400-digit count and a lone surrogate in stats.json were tracebacks."""
    import os
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(pipeline_run, copy, ignore=shutil.ignore_patterns("report.html"))
    victim, secret = tmp_path / "victim.txt", tmp_path / "secret.txt"
    victim.write_text("mine")
    secret.write_text("a secret line of another file")
    (copy / ".report.html.tmp").symlink_to(victim)
    (copy / "..tokenmill.tmp").symlink_to(victim)  # write_json's temporary of .tokenmill
    (copy / "settings.yaml").unlink()
    (copy / "settings.yaml").symlink_to(secret)
    os.mkfifo(copy / "clean" / "docs" / "docs" / "part-99999.parquet")
    stats_file = copy / "clean" / "web" / "stats.json"
    stats_ = json.loads(stats_file.read_text())
    stats_["kept"] = 10**400
    stats_["rejected_by_reason"]["bad\ud800reason"] = 1
    stats_["rejected_by_reason"]["long" * 1_000_000] = 1  # a reason of 4 MB: clipped
    stats_file.write_text(json.dumps(stats_))
    dedup_stats = json.loads((copy / "dedup" / "stats.json").read_text())
    (copy / "dedup" / "stats.json").write_text(json.dumps({**dedup_stats, "num_perm": 50_000_000}))  # ran minutes
    assert main([str(copy)]) == 0
    html = html_of(copy)
    assert victim.read_text() == "mine" and not (copy / "report.html").is_symlink()
    assert "a secret line" not in html and "bad?reason" in html and len(html) < 2_000_000
    assert [r[2:4] for r in table_rows(html, FUNNEL) if r[:2] == ["Clean", "web"]] == [[f"{stats_['input']:,}", "—"]]
