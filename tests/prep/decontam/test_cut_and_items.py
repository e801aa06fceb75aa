"""What a cut removes (the span, its window out to word boundaries, overlaps merged, the pieces joined by a
paragraph break) and how benchmark files become items (fields joined, ids or positions, bad records counted
by reason, a benchmark of no item an error)."""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.decontam.cut import PIECE_SEPARATOR, cut_ranges, without
from prep.decontam.items import ItemsConfig, read_benchmark
from prep.ingest.inputs import InputError
from tests.conftest import write_lines


def test_the_window_is_widened_to_word_boundaries_and_overlaps_merged():
    text = "alpha beta gamma delta epsilon zeta eta theta"
    begin = text.index("delta")
    (b, e), = cut_ranges(text, [(begin, begin + 5)], window=3)  # 3 characters end inside "gamma" and "epsilon"
    assert text[b:e] == "gamma delta epsilon"
    assert cut_ranges(text, [(0, 5), (6, 10)], window=1) == [(0, 11)]  # "alpha" and "beta", their windows meet
    assert cut_ranges("北京是中国的首都", [(2, 4)], window=1) == [(1, 5)]  # a CJK character is a word


def test_what_is_left_is_one_document_with_its_paragraphs():
    text = "First paragraph.\n\nSecond one, cut here.\n\nThird paragraph\nwith two lines."
    begin = text.index("cut here")
    left = without(text, [(begin - 5, begin + 9)])
    assert left == "First paragraph.\n\nSecond" + PIECE_SEPARATOR + "Third paragraph\nwith two lines."
    assert without(text, [(0, len(text))]) == ""


def test_items_from_named_fields_lists_joined_and_ids_or_positions(tmp_path):
    records = [{"id": 7, "question": "What is the capital of France?", "choices": ["Paris", "Lyon", 3]},
               {"question": "Which gas do plants take in?", "choices": ["CO2", "O2"]},
               {"question": "No choices here"}, {"question": ["a", {"b": 1}], "choices": []}, b"{broken",
               b'"a JSON string, not an object"']
    write_lines(tmp_path / "mmlu.jsonl", records)
    benchmark = read_benchmark("mmlu", str(tmp_path / "mmlu.jsonl"), ItemsConfig(text_fields=["question", "choices"]))
    assert benchmark.items == [("7", "What is the capital of France?\nParis\nLyon\n3"),
                               ("mmlu.jsonl:2", "Which gas do plants take in?\nCO2\nO2")]
    assert benchmark.skipped == {"missing field 'choices'": 1, "field 'question' is not text": 1,
                                 "malformed JSON: JSONDecodeError": 1, "a JSON str, not an object": 1}


def test_parquet_gzip_and_text_files_are_benchmarks_too(tmp_path):
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["one item text", "two item text"]}), tmp_path / "b.parquet")
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(json.dumps({"text": "three"}).encode() + b"\n"))
    (tmp_path / "d.txt").write_text("a whole file is one item")
    items = read_benchmark("x", str(tmp_path), ItemsConfig()).items
    assert items == [("a", "one item text"), ("b", "two item text"), ("c.jsonl.gz:1", "three"),
                     ("d.txt", "a whole file is one item")]


def test_a_parquet_item_too_large_or_holding_a_value_python_cannot_hold_is_skipped_with_its_reason(tmp_path):
    texts = ["one item text", "x" * 12_000_000, "three item text", "four item text"]
    at = pa.array([0, 0, 2**62, 0], pa.int64()).cast(pa.timestamp("us"))  # the third: past year 9999
    pq.write_table(pa.table({"id": ["a", "b", "c", "d"], "text": texts, "at": at}), tmp_path / "b.parquet")
    benchmark = read_benchmark("x", str(tmp_path / "b.parquet"), ItemsConfig())
    assert benchmark.items == [("a", "one item text"), ("d", "four item text")]
    assert set(benchmark.skipped) == {"record over 10000000 bytes", "unreadable value: OverflowError: date value "
                                      "out of range"} and sum(benchmark.skipped.values()) == 2



def test_an_item_over_the_limit_in_any_form_or_not_valid_unicode_is_skipped_with_its_reason(tmp_path):
    """A text file one byte over the limit was read cut short and kept; a list of choices was not measured
    (30 MB accepted); a lone surrogate (JSON allows "\\ud800") failed the decontaminate job with a traceback
    when its index was built."""
    (tmp_path / "big.txt").write_bytes(b"a" * 10_000_001)
    (tmp_path / "fits.txt").write_bytes(b"a" * 10_000_000)
    pq.write_table(pa.table({"choices": [["x" * 1_000_000] * 30, ["one choice", "another"]]}), tmp_path / "l.parquet")
    (tmp_path / "s.jsonl").write_text('{"text": "a lone \\ud800 surrogate"}\n{"text": "fine", "id": "\\udfff"}\n'
                                      '{"text": "fine too"}\n')
    benchmark = read_benchmark("x", str(tmp_path / "l.parquet"), ItemsConfig(text_fields=["choices"]))
    assert benchmark.items == [("l.parquet:2", "one choice\nanother")]
    assert benchmark.skipped == {"record over 10000000 bytes": 1}
    benchmark = read_benchmark("x", f"{tmp_path / 'big.txt'},{tmp_path / 'fits.txt'},{tmp_path / 's.jsonl'}",
                               ItemsConfig())
    assert [(item_id, len(text)) for item_id, text in benchmark.items] == [("fits.txt", 10_000_000),
                                                                          ("s.jsonl:3", 8)]
    assert benchmark.skipped == {"record over 10000000 bytes": 1, "an unpaired surrogate (not valid Unicode)": 2}


def test_an_item_with_a_key_twice_is_skipped_with_its_reason(tmp_path):
    """Found by review: {"text": A, "text": B} was read as B alone, A never cut from the documents."""
    (tmp_path / "items.jsonl").write_text('{"id": "q1", "text": "A first text.", "text": "A second text."}\n'
                                          '{"id": "q2", "text": "A third text."}\n')
    benchmark = read_benchmark("x", str(tmp_path / "items.jsonl"), ItemsConfig())
    assert benchmark.items == [("q2", "A third text.")] and benchmark.skipped == {"malformed JSON: RepeatedKey": 1}

def test_a_benchmark_without_items_or_a_damaged_file_is_an_error(tmp_path):
    write_lines(tmp_path / "wrong.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(InputError, match="no item in .*missing field 'text' \\(1\\).*set items.text_fields"):
        read_benchmark("wrong", str(tmp_path / "wrong.jsonl"), ItemsConfig())
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(b'{"text": "x"}\n' * 1000)[:-30])
    with pytest.raises(InputError, match="cut.jsonl.gz cannot be read"):
        read_benchmark("cut", str(tmp_path / "cut.jsonl.gz"), ItemsConfig())
    with pytest.raises(InputError, match="no such file"):
        read_benchmark("gone", str(tmp_path / "gone.jsonl"), ItemsConfig())


def test_many_spans_inside_one_long_word_are_widened_in_a_walk_of_the_word_once(monkeypatch):
    # "ŀ" is a letter to the cut (no word boundary) and a unit's end to the matcher: a 28 KB word of 2,000
    # matched spans walked the word out to its ends for each span, 41 s
    from prep.decontam import cut

    text = "aŀbŀcŀdŀ" * 3500
    spans = [(i, i + 4) for i in range(0, len(text), 14)]
    steps = []
    joined = cut._joined
    monkeypatch.setattr(cut, "_joined", lambda t, i: steps.append(i) or joined(t, i))
    assert cut_ranges(text, spans, window=200) == [(0, len(text))]
    assert len(steps) < 3 * len(text)  # each span on its own walked to both ends: 2,000 x 28,000


def test_an_item_id_past_the_bound_is_skipped_and_a_benchmark_past_its_bounds_is_an_error(tmp_path, monkeypatch):
    # every match carries its item's id: a 9 MB id made a 17 KB document of 200 matches a 1.8 GB batch; an 80 KB
    # .jsonl.gz of 3,000,000 tiny items took 500 MB of the driver
    from prep.decontam import items

    write_lines(tmp_path / "b.jsonl", [{"id": "x" * 1001, "text": "one"}, {"id": "y" * 1000, "text": "two"}])
    benchmark = read_benchmark("b", str(tmp_path / "b.jsonl"), ItemsConfig())
    assert benchmark.items == [("y" * 1000, "two")] and benchmark.skipped == {"id over 1000 characters": 1}
    write_lines(tmp_path / "many.jsonl", [{"text": f"item {i}"} for i in range(101)])
    monkeypatch.setattr(items, "MAX_ITEMS", 100)
    with pytest.raises(InputError, match="over 100 items"):
        read_benchmark("many", str(tmp_path / "many.jsonl"), ItemsConfig())


def test_a_byte_order_mark_or_a_copy_costs_no_item_and_a_damaged_parquet_is_named(tmp_path):
    # the first item of a JSON Lines file with a BOM had been malformed JSON: never matched, "1/1 items found"
    write_lines(tmp_path / "bom.jsonl", [{"id": "a", "text": "first item"}, {"id": "b", "text": "second item"}])
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "bom.jsonl").read_bytes())
    benchmark = read_benchmark("b", str(tmp_path / "bom.jsonl"), ItemsConfig())
    assert benchmark.items == [("a", "first item"), ("b", "second item")] and benchmark.skipped == {}
    # an item listed again is one item (100,000 copies of one had made 2 M rows of matches from 20 documents)
    write_lines(tmp_path / "copies.jsonl", [{"id": f"q{i}", "text": "the same question"} for i in range(5)]
                + [{"id": "other", "text": "another question"}])
    benchmark = read_benchmark("c", str(tmp_path / "copies.jsonl"), ItemsConfig())
    assert benchmark.items == [("q0", "the same question"), ("other", "another question")]
    assert benchmark.skipped == {"the same text as an earlier item": 4}
    pq.write_table(pa.table({"text": ["one item", "another item"]}), tmp_path / "d.parquet")
    data = bytearray((tmp_path / "d.parquet").read_bytes())
    data[4:12] = b"\xff" * 8  # the first page's header
    (tmp_path / "d.parquet").write_bytes(bytes(data))
    with pytest.raises(InputError, match="benchmark p: d.parquet cannot be read"):  # it had named no file
        read_benchmark("p", str(tmp_path / "d.parquet"), ItemsConfig())


def test_the_bounds_hold_for_all_benchmarks_together_and_for_records_that_are_no_item(tmp_path, monkeypatch):
    # each benchmark had its own bounds, and their number none: the same file twice took the driver twice as much
    from prep.decontam import items
    from spark_stages.decontaminate import Config, read_benchmarks

    write_lines(tmp_path / "a.jsonl", [{"text": f"item {i}"} for i in range(60)])
    monkeypatch.setattr(items, "MAX_ITEMS", 100)
    assert len(read_benchmarks(Config(benchmarks={"a": str(tmp_path / "a.jsonl")}))[0].items) == 60
    with pytest.raises(InputError, match="benchmark b: the benchmarks hold over 100 items"):
        read_benchmarks(Config(benchmarks={"a": str(tmp_path / "a.jsonl"), "b": str(tmp_path / "a.jsonl")}))
    # 10 M lines of {} took 100 s before Spark started, to end with one item
    write_lines(tmp_path / "empty.jsonl", [{}] * 30 + [{"text": "the one item"}])
    monkeypatch.setattr(items, "MAX_SKIPPED", 20)
    with pytest.raises(InputError, match="over 20 records that are no item .*missing field 'text' \\(21\\)"):
        read_benchmark("e", str(tmp_path / "empty.jsonl"), ItemsConfig())
