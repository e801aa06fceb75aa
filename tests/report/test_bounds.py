"""A report's size and reads stay bounded whatever the outputs hold, and what it shows is text: outputs made
here with pyarrow (no Spark) in the shapes the jobs write, with documents of a megabyte, ids of ten
thousand characters, thousands of reasons, control characters and markup."""

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from report import ReportConfig, write_report
from report.html import text
from report.layout import LayoutError, stage_dirs
from report.scan import pieces, plan
from spark_stages.outputs import written_names
from tests.report.expected import smallest_ids
from tests.report.page import read_page

MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)></textarea>"


def documents(count: int, text_chars: int, id_chars: int, reasons: int | None, start: int = 0) -> pa.Table:
    ids = [f"{i:08d}-{MARKUP}" + "x" * id_chars for i in range(start, start + count)]
    body = "word " * (text_chars // 5)
    texts = [f"{MARKUP} document {i} \x00\x07\u202e {body}" for i in range(start, start + count)]
    columns = {"id": ids, "text": texts, "source": ["f.jsonl"] * count, "metadata": [None] * count,
               "lang": ["en"] * count, "lang_score": pa.array([0.9] * count, pa.float32())}
    if reasons is not None:
        columns["reason"] = [f"rule:{MARKUP}{i % reasons}" for i in range(start, start + count)]
    return pa.table(columns)


def clean_output(folder, count: int, text_chars: int = 1000, id_chars: int = 10, reasons: int = 3, files: int = 4):
    """A folder as the clean job writes it: half the documents kept, half rejected with `reasons` reasons."""
    for name, kind in (("docs", None), ("rejected", reasons)):
        (folder / name).mkdir(parents=True)
        per_file = count // 2 // files
        for f in range(files):
            table = documents(per_file, text_chars, id_chars, kind, start=f * per_file + (0 if kind is None else 10**6))
            pq.write_table(table, folder / name / f"part-{f:05d}.parquet", row_group_size=max(1, per_file // 4))
    (folder / "quarantine").mkdir()
    rejected = pq.read_table(folder / "rejected", columns=["reason"]).column("reason").to_pylist()
    by_reason = {r: rejected.count(r) for r in sorted(set(rejected))}
    stats = {"format_version": "1", "input": count, "kept": count // 2, "rejected": len(rejected), "quarantined": 0,
             "rejected_by_reason": by_reason, "files": 1, "file_errors": [], "file_warnings": [], "seconds": 1.0}
    (folder / "stats.json").write_text(json.dumps(stats))
    (folder / ".tokenmill").write_text(json.dumps({"written": ["docs", "rejected", "quarantine", "stats.json"]}))
    return folder


def test_the_report_size_is_bounded_whatever_the_documents_ids_and_reasons(tmp_path):
    small = clean_output(tmp_path / "small", 80)
    huge = clean_output(tmp_path / "huge", 200, text_chars=1_000_000, id_chars=10_000, reasons=3_000)
    cfg = ReportConfig()
    sizes = {name: write_report(folder).stat().st_size for name, folder in (("small", small), ("huge", huge))}
    # 200 MB of text, ids of 10,000 characters, 100 reasons: the caps hold it to the small one's order
    assert sizes["huge"] < 2 * 1024 * 1024 and sizes["huge"] < 12 * sizes["small"]
    html = (huge / "report.html").read_text()
    page = read_page(html)
    assert max(map(len, page.by_class["doc-id"])) <= cfg.field_chars + 1
    assert max(map(len, page.by_class["text"])) <= cfg.example_chars
    assert len(page.by_class["reason"]) == cfg.max_reasons + 1  # the rest counted together
    assert "report.html" in written_names(huge)


def test_reads_stop_at_the_budget_and_the_report_says_what_share_it_read(tmp_path):
    out = clean_output(tmp_path / "out", 4_000, text_chars=2_000, files=8)
    every = pieces(out / "rejected", 100)
    budget = sum(p.column_bytes["text"] for p in every) // 5
    chosen = plan(every, ["text"], budget)
    assert 0 < chosen.rows_read < chosen.rows and sum(p.column_bytes["text"] for p in chosen.chosen) <= budget
    assert plan(every, ["text"], budget).chosen == chosen.chosen  # the same row groups every time
    html = write_report(out, ReportConfig(read_bytes=budget)).read_text()
    assert f"of {chosen.rows:,} rows" in read_page(html).text


def test_the_budget_counts_text_as_it_decompresses(tmp_path):
    """Found by trying: 200 documents of a megabyte of one repeated line are 1 MB of zstd; the budget counted
    compressed bytes, so a 64 MB budget read all 200 MB of them."""
    out = clean_output(tmp_path / "out", 400, text_chars=1_000_000, files=4)
    every = pieces(out / "docs", 100)
    assert sum(p.column_bytes["text"] for p in every) > 150 << 20  # as read, not as stored
    chosen = plan(every, ["text"], 64 << 20)
    assert 0 < chosen.rows_read <= 64 and chosen.rows == 200


def test_what_a_dictionary_decodes_to_is_held_to_the_budget(tmp_path):
    """The footer counts a dictionary's value once: 2,000 rows of one 512 KB string are a 600 KB file, 512 KB in
    the footer and 1 GB decoded; they are read as a dictionary and only the rows that fit are decoded."""
    from report.scan import scanned

    out = clean_output(tmp_path / "out", 40)
    rows = 2_000
    pq.write_table(pa.table({"id": [f"bomb-{i}" for i in range(rows)], "text": ["b" * (512 << 10)] * rows,
                             "source": ["f.jsonl"] * rows, "lang": ["en"] * rows}),
                   out / "docs" / "part-00009.parquet", row_group_size=rows)
    budget = 16 << 20
    chosen, tables = scanned(out / "docs", ["id", "text"], budget, 100)
    assert chosen.whole  # by the footers, everything fits
    read = list(tables)
    assert all(table.schema.field("text").type == pa.string() for table in read)  # decoded, as before
    assert 2 * budget - (1 << 20) < sum(table.nbytes for table in read) <= 2 * budget  # 1 GB were there
    assert len(write_report(out, ReportConfig(read_bytes=budget)).read_text()) < 2_000_000


def test_ids_that_are_numbers_are_read_as_text_and_the_stage_is_shown(tmp_path):
    """An output whose id column is int64 (edited, or another tool's) hid its whole stage behind "not as
    tokenmill writes them (AttributeError ...)"."""
    out = clean_output(tmp_path / "out", 40)
    for part in sorted((out / "docs").glob("*.parquet")):
        table = pq.read_table(part)
        pq.write_table(table.set_column(0, "id", pa.array(range(10**9, 10**9 + table.num_rows), pa.int64())), part)
    page = read_page(write_report(out).read_text())
    assert "Not shown" not in page.text and "AttributeError" not in page.text
    assert any(doc_id.startswith("1000000") for doc_id in page.by_class["doc-id"])  # kept documents, by number


def test_the_sample_is_the_smallest_id_hashes_of_what_was_read(tmp_path):
    out = clean_output(tmp_path / "out", 400, reasons=1)
    ids = pq.read_table(out / "rejected", columns=["id"]).column("id").to_pylist()
    page = read_page(write_report(out, ReportConfig(examples_per_reason=5, kept_examples=0)).read_text())
    shown = [i.removesuffix("…") for i in page.by_class["doc-id"]]
    assert shown == [i[:len(s)] for i, s in zip(smallest_ids(ids, 5), shown)]


def test_documents_that_share_an_id_are_all_sampled_in_a_fixed_order(tmp_path):
    # a crawl read twice (or two sources that number alike) puts the same id in the output more than once:
    # the sample's ties are broken by what is shown, never by comparing the shown objects
    out = clean_output(tmp_path / "out", 16, reasons=1, files=1)
    table = pq.read_table(out / "rejected")
    copies = pa.array([f"copy {t}" for t in table.column("text").to_pylist()])
    twice = pa.concat_tables([table, table.set_column(table.column_names.index("text"), "text", copies)])
    pq.write_table(twice, out / "rejected" / "part-00000.parquet")
    html = write_report(out, ReportConfig(examples_per_reason=4, kept_examples=0)).read_text()
    shown = read_page(html).by_class["doc-id"]
    assert len(shown) == 4 and shown[0] == shown[1] and shown[2] == shown[3]
    assert html == write_report(out, ReportConfig(examples_per_reason=4, kept_examples=0)).read_text()


def test_documents_are_escaped_text_with_control_characters_shown(tmp_path):
    assert text("<a href='javascript:x'>&\x00\x1b") == "&lt;a href=&#x27;javascript:x&#x27;&gt;&amp;␀␛"
    page = read_page(write_report(clean_output(tmp_path / "out", 40)).read_text())
    assert MARKUP in page.text and re.search("document \\d+ ␀␇\u202e", page.text)
    assert {tag for tag, _ in page.tags}.isdisjoint({"img", "textarea", "iframe"})
    assert [tag for tag, _ in page.tags].count("script") == 1


def test_a_folder_without_tokenmill_output_is_named(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(LayoutError, match="holds no tokenmill output"):
        stage_dirs(tmp_path)
    with pytest.raises(LayoutError, match="is not a folder"):
        stage_dirs(tmp_path / "missing")


def test_an_output_copied_without_its_record_is_said_so_and_reported_elsewhere(tmp_path, capsys):
    """It was refused as a folder "holding files tokenmill did not write", choose a new or empty one."""
    from report.cli import main

    out = clean_output(tmp_path / "out", 40)
    (out / ".tokenmill").unlink()
    assert main([str(out)]) == 2
    assert "has no .tokenmill" in capsys.readouterr().err and not (out / "report.html").exists()
    assert main([str(out), "--output", str(tmp_path / "report.html")]) == 0
    assert MARKUP in read_page((tmp_path / "report.html").read_text()).text  # its documents, shown


def test_settings_nested_deep_or_with_a_repeated_key_are_not_read(tmp_path):
    """Found by review (2026-12-07): 20,000 nested brackets (40 KB) took the report's YAML parser a minute,
    100,000 more than two; a key given twice was read as its second value. Both are settings not read."""
    from report.run import Run

    out = clean_output(tmp_path / "run", 40)
    for settings in ("min_words: " + "[" * 100_000 + "]" * 100_000 + "\n", "min_words: 5\nmin_words: 50\n"):
        (out / "settings.yaml").write_text(settings)
        assert Run.of(out, ReportConfig()).settings == {}
    (out / "settings.yaml").write_text("min_words: 50\n")
    assert Run.of(out, ReportConfig()).settings == {"min_words": 50}


def test_settings_with_yaml_aliases_are_not_read_and_the_report_is_written(tmp_path):
    """Found by trying: nine nested aliases in settings.yaml, 300 bytes, expand to 10^9 strings once anything
    walks them (the report's PII settings were turned into text: 5.6 GB before it was killed)."""
    from report.run import Run

    out = clean_output(tmp_path / "run", 40)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))
    (out / "settings.yaml").write_text(bomb + "pii:\n  enabled: *i\n")
    assert Run.of(out, ReportConfig()).settings == {}  # refused, not expanded
    html = write_report(out).read_text()
    assert "pii:" in html and len(html) < 1_000_000  # shown as the text it is


def test_language_and_bucket_values_are_clipped_and_their_number_bounded(tmp_path):
    """Found by trying: a lang or bucket_NAME value of a megabyte was shown whole, and a million distinct
    values were all counted (the report lists 20 languages and 100 buckets)."""
    from report.sample import MAX_VALUES, OTHER_VALUES, VALUE_CHARS, Distributions

    distinct = MAX_VALUES + 500
    seen = Distributions()
    seen.add(pa.table({"lang": [f"{i:05d}" + "x" * 1_000_000 if i < 3 else f"{i:05d}" for i in range(distinct)],
                       "bucket_q": [f"{i:05d}" + "y" * 1_000_000 for i in range(distinct)]}))
    for counter in (seen.languages, seen.buckets["bucket_q"]):
        assert len(counter) == MAX_VALUES + 1 and sum(counter.values()) == distinct
        assert counter[OTHER_VALUES] == 500 and max(map(len, counter)) == VALUE_CHARS
    out = clean_output(tmp_path / "out", 40)
    table = pq.read_table(out / "docs" / "part-00000.parquet")
    big = pa.array([f"{i}" + "z" * 1_000_000 for i in range(table.num_rows)])
    table = table.set_column(table.schema.get_field_index("lang"), "lang", big).append_column("bucket_q", big)
    pq.write_table(table, out / "docs" / "part-00000.parquet")
    html = write_report(out).read_text()
    assert len(html) < 1_000_000 and "z" * (ReportConfig().field_chars + 1) not in html


def test_values_past_those_listed_are_summed_in_one_row_not_left_out():
    """Found by reading: past the 100 bucket values listed, the rest (and OTHER_VALUES, which sorts after the
    numbers) was left out of the table, so its counts no longer added up to the documents read."""
    from report.sample import MAX_VALUES, OTHER_VALUES, Distributions
    from report.stages.common import distributions

    seen = Distributions()
    values = [f"{i % (MAX_VALUES + 200)}" for i in range(3 * MAX_VALUES)]
    seen.add(pa.table({"id": [f"d{i}" for i in range(len(values))], "text": ["t"] * len(values), "lang": values,
                       "bucket_q": values}))
    tables = {block.title: block for block in distributions({"kept": seen}) if hasattr(block, "rows")}
    for title in ("Languages (documents read)", "Documents by bucket_q"):
        rows = tables[title].rows
        assert sum(row[1] for row in rows) == len(values), title
        assert rows[-1][0] == OTHER_VALUES and len(rows) in (21, 101)
        assert [row[0] for row in rows].count(OTHER_VALUES) == 1  # the most counted language here


def test_languages_of_equal_counts_are_listed_by_name_whatever_the_process():
    """Found by an audit: languages counted alike were listed in the order a set of them iterates, which each
    process's string hash seed decides, and so was which of them got a row of the 20 and which went to the
    rest: the same run's report differed from process to process."""
    from report.sample import OTHER_VALUES, Distributions
    from report.stages.common import distributions

    seen = Distributions()
    languages = [f"l{i:02d}" for i in range(30)] + ["zz"] * 3 + ["aa"] * 2
    seen.add(pa.table({"id": [f"d{i}" for i in range(len(languages))], "text": ["t"] * len(languages),
                       "lang": languages}))
    rows = next(b for b in distributions({"kept": seen}) if b.title == "Languages (documents read)").rows
    assert [row[0] for row in rows] == ["zz", "aa", *[f"l{i:02d}" for i in range(18)], OTHER_VALUES]
    assert rows[-1][1] == 12


def test_a_comparison_clips_the_reasons_that_changed(tmp_path):
    """Found by trying: reasons of a megabyte in one run's rejected documents were shown whole in compare.html
    (the stage's own report clips them)."""
    from report.cli import main

    a, b = clean_output(tmp_path / "a", 80), clean_output(tmp_path / "b", 80)
    for part in sorted((b / "rejected").glob("*.parquet")):
        table = pq.read_table(part)
        huge = pa.array([f"rule:{i}" + "r" * 1_000_000 if i else None for i in range(table.num_rows)])
        pq.write_table(table.set_column(table.schema.get_field_index("reason"), "reason", huge), part)
    assert main([str(a), "--compare", str(b)]) == 0
    html = (a / "compare.html").read_text()
    assert "rule:1rrr" in html and "r" * (ReportConfig().field_chars + 1) not in html and len(html) < 2_000_000
    assert "rejected: (no reason)" in html and "rejected: None" not in html  # a null reason says so


def test_the_normalization_view_clips_what_changed_and_its_context(tmp_path):
    """The job writes a few characters of each change and its context; an output from elsewhere, a megabyte."""
    out = clean_output(tmp_path / "out", 40)
    (out / "normalized").mkdir()
    big = "n" * 1_000_000
    pq.write_table(pa.table({"id": ["d1", "d2"], "at": [0, 5], "before": [big, "\u00a0"], "after": [big, " "],
                             "left": [big, "ab"], "right": [big, "cd"]}), out / "normalized" / "part-00000.parquet")
    html = write_report(out).read_text()
    assert "ab ⟦⍽⟧ cd" in html and "n" * (ReportConfig().field_chars + 1) not in html and len(html) < 1_000_000
    assert "n" * ReportConfig().field_chars + "…" in html  # each row its own (a closure showed one row's twice)


def test_the_classifiers_languages_are_clipped_counted_as_numbers_and_summed_past_those_listed():
    """A train job's report.json from elsewhere: a language of 10,000 characters, counts that are not numbers,
    and more languages and labels than the table lists (the rest summed in one row and one column)."""
    from report.sample import OTHER_VALUES
    from report.stages.classifier import SHOWN, _languages

    languages = {"x" * 10_000: {"good": 5}, "broken": [1],
                 **{f"l{k:03d}": {"good": 1, f"label{k:03d}": 2, "text": "9", "flag": True} for k in range(100)}}
    (table,) = _languages({"languages": languages}, 200)
    assert table.header == ["language", "good", *[f"label{k:03d}" for k in range(SHOWN - 1)], OTHER_VALUES]
    assert [row[0] for row in table.rows] == ["x" * 200 + "…", *[f"l{k:03d}" for k in range(SHOWN - 1)], OTHER_VALUES]
    assert all(type(n) is int for row in table.rows for n in row[1:])
    assert sum(n for row in table.rows for n in row[1:]) == 5 + 100 * 3  # every count, once
    # found by a review: a count of over 4,300 digits, more than Python turns into text, failed the whole
    # report; a language without a count got a row of its own, and no table at all had none
    assert _languages({"languages": {"de": {"good": 10 ** 4300, "junk": -3, "x": 2 ** 53}, "fr": {}, "es": "x"}},
                      200) == []
    assert _languages({"languages": ["de"]}, 200) == [] and _languages({}, 200) == []
    (table,) = _languages({"languages": {"de": {"good": 2 ** 53 - 1}, "fr": {}}}, 200)
    assert table.rows == [["de", 2 ** 53 - 1]]
    # a label named as the rest's column is counted in it: one such column, never two
    (table,) = _languages({"languages": {"de": {OTHER_VALUES: 5, **{f"l{k:02d}": 1 for k in range(25)}}}}, 200)
    assert table.header == ["language", *[f"l{k:02d}" for k in range(SHOWN)], OTHER_VALUES]
    assert table.rows == [["de", *[1] * SHOWN, 5 + 5]]


def test_a_count_past_a_float_or_settings_yaml_cannot_read_leaves_the_report_written(tmp_path):
    """Found by a review: a count of 401 digits in stats.json raised OverflowError while the bars were drawn,
    and `seed: <5,000 digits>` or `when: 2024-13-45` in settings.yaml a ValueError from PyYAML: the report
    of a folder from elsewhere was a traceback."""
    from report.run import Run

    out = clean_output(tmp_path / "run", 40)
    stats = json.loads((out / "stats.json").read_text())
    stats["rejected_by_reason"]["huge"] = 10 ** 400
    (out / "stats.json").write_text(json.dumps(stats))
    for settings in ("seed: " + "9" * 5000 + "\n", "when: 2024-13-45\n"):
        (out / "settings.yaml").write_text(settings)
        assert Run.of(out, ReportConfig()).settings == {}
        html = write_report(out).read_text()
        assert "rejected" in html and "1" + "0" * 400 not in html


def test_benchmark_files_named_by_settings_from_elsewhere_are_looked_at_within_bounds(tmp_path):
    """Found by a review: a decontaminate run's settings.yaml named "/" as a benchmark, and the report walked the
    whole file system for its item texts (10 s); a FIFO in the folder it named hung the report."""
    import os

    from report.lookup import names_within

    folder = tmp_path / "bench"
    folder.mkdir()
    for i in range(10):
        (folder / f"part{i}.jsonl").write_text('{"text": "an item"}\n')
    assert names_within(str(folder), limit=20) and not names_within(str(folder), limit=5)
    assert not names_within(f"{folder}/*.jsonl", limit=5) and names_within(f"{folder}/part1.jsonl,{folder}", limit=12)
    os.mkfifo(folder / "hang.jsonl")
    from prep.ingest.inputs import InputError, expand_inputs

    with pytest.raises(InputError, match="not a regular file"):  # what the report's reading is refused with
        expand_inputs(str(folder))


def test_a_json_file_with_a_key_twice_is_not_read(tmp_path):
    """Noticed in review: the report read a mixture.json naming a source twice as its second entry, a mixture
    the loader refuses (schemas.trust.keys_once)."""
    from report.layout import read_json

    (tmp_path / "mixture.json").write_text('{"sources": {"web": {"weight": 1}, "web": {"weight": 3}}}')
    (tmp_path / "once.json").write_text('{"sources": {"web": {"weight": 1}, "code": {"weight": 3}}}')
    assert read_json(tmp_path / "mixture.json") is None
    assert read_json(tmp_path / "once.json") == {"sources": {"web": {"weight": 1}, "code": {"weight": 3}}}


def test_a_report_parses_each_json_file_once_and_sees_it_rewritten(tmp_path, monkeypatch):
    """Found by a review: `python -m jobs.report OUT` parsed OUT/stats.json four times (what the folder is, twice,
    the stage, and whether it is damaged): 22 s for a 48 MB one from elsewhere, under the 64 MB cap."""
    import report.layout
    from report.cli import main

    out = clean_output(tmp_path / "run", 40)
    parse, parsed = report.layout.regular_file_text, []

    def counted(path, limit):
        parsed.append(path.name)
        return parse(path, limit)

    monkeypatch.setattr(report.layout, "regular_file_text", counted)
    assert main([str(out)]) == 0
    assert parsed.count("stats.json") == 1
    assert report.layout._parses.get() is None  # the parses are the report's, not the process's
    # a file rewritten between two reports is read again
    stats = json.loads((out / "stats.json").read_text())
    stats["rejected_by_reason"] = {"rule:new reason": 20}
    (out / "stats.json").write_text(json.dumps(stats))
    assert "rule:new reason" in write_report(out).read_text() and parsed.count("stats.json") == 2
    assert report.layout._parses.get() is None


def test_a_report_keeps_parses_of_a_bounded_size_and_each_thread_its_own(tmp_path, monkeypatch):
    """Found by the review of 2026-12-08: every parse was kept until the report ended (six sources' 30 MB
    stats.json files held 1 GB), in a module global that two reports in two threads left installed for good."""
    import threading

    import report.layout
    from report.layout import read_json, reading_once

    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"name": name, "pad": "x" * 1000}))
    parse, parsed = report.layout.regular_file_text, []
    monkeypatch.setattr(report.layout, "regular_file_text", lambda path, limit: parsed.append(path.name) or
                        parse(path, limit))
    monkeypatch.setattr(report.layout, "KEPT_PARSE_BYTES", 1500)  # one of the two files at a time
    with reading_once():
        for name in ("a", "a", "b", "b", "a"):
            assert read_json(tmp_path / f"{name}.json")["name"] == name
    assert parsed == ["a.json", "b.json", "a.json"]  # b's parse pushed a's out
    entered, other_done, seen = threading.Event(), threading.Event(), {}

    def first():
        with reading_once():
            seen["first"] = report.layout._parses.get()
            entered.set()
            other_done.wait(30)
            seen["first, after"] = report.layout._parses.get()

    def second():
        entered.wait(30)
        with reading_once():
            seen["second"] = report.layout._parses.get()
        other_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert seen["first"] is seen["first, after"] and seen["second"] is not None and seen["second"] is not seen["first"]
    assert report.layout._parses.get() is None
