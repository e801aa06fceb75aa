"""Benchmark items in MMLU's, C-Eval's and CMMLU's layouts, read within bounds; the fixed subset; the pairs
encoded as lm-evaluation-harness encodes them; the accuracies as it defines them; the decontamination record
the pipeline writes beside the shards and the warning the loop gives from it."""

import csv
import gzip
import json
import math
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from loaders.collate import IGNORE
from schemas.decontamination import RECORD_FILE, RecordError, new_record, read_record, validate_record
from tests.conftest import within
from trainer import mc_items
from trainer.benchmarks import Benchmarks, BenchmarksConfig, accuracy, encode_pairs, pre_token_starts, prompt
from trainer.contamination import file_sha256, warnings
from trainer.mc_items import Item, ItemsError, fixed_subset, item_of, read_items

QUESTION = "Which tool installs Debian packages?"
CHOICES = ["apt", "pacman", "emerge", "brew"]


def test_the_mmlu_ceval_and_cmmlu_layouts_and_answers_as_letters_or_indexes():
    expected = Item(QUESTION, tuple(CHOICES), 0)
    assert item_of({"question": QUESTION, "subject": "x", "choices": CHOICES, "answer": 0}) == expected  # MMLU
    assert item_of({"id": 3, "question": QUESTION, "A": "apt", "B": "pacman", "C": "emerge", "D": "brew",
                    "answer": "A", "explanation": ""}) == expected  # C-Eval
    assert item_of({"": "7", "Question": QUESTION, "A": "apt", "B": "pacman", "C": "emerge", "D": "brew",
                    "Answer": "a"}) == expected  # CMMLU, a lowercase letter
    assert item_of({"question": QUESTION, "choices": CHOICES, "answer": "0"}) == expected  # digits
    # a CSV of 4- and 5-choice items (A-E columns): a 4-choice row leaves E empty (it was dropped as not text)
    assert item_of({"Question": QUESTION, "A": "apt", "B": "pacman", "C": "emerge", "D": "brew", "E": "",
                    "Answer": "A"}) == expected
    assert item_of({"question": QUESTION, "A": "apt", "B": "pacman", "C": "emerge", "D": "brew", "E": None,
                    "answer": "A"}) == expected  # the same in Parquet, E null
    for bad, why in [({"choices": CHOICES, "answer": 0}, "no question"),
                     ({"question": QUESTION, "choices": ["only"], "answer": 0}, "not 2 to 26 choices"),
                     ({"question": QUESTION, "choices": CHOICES, "answer": 4}, "no answer"),
                     ({"question": QUESTION, "choices": CHOICES, "answer": "E"}, "no answer"),
                     ({"question": QUESTION, "choices": CHOICES, "answer": True}, "no answer"),
                     ({"question": QUESTION, "choices": [*CHOICES[:3], {"x": 1}], "answer": 0}, "not text"),
                     ({"question": "x" * 20_001, "choices": CHOICES, "answer": 0}, "no question"), ([1], "not a"),
                     # C-Eval's columns with C missing: "C" would name D's text
                     ({"question": QUESTION, "A": "apt", "B": "pacman", "D": "brew", "answer": "C"}, "in a row"),
                     # an empty choice before the last is no choice: the letters after it would be misread
                     ({"question": QUESTION, "A": "apt", "B": "", "C": "brew", "answer": "C"}, "not text"),
                     ({"question": QUESTION, "A": "apt", "B": "", "answer": "A"}, "not 2 to 26"),
                     # JSON allows a lone surrogate: it failed the training start with a traceback when keyed
                     ({"question": "Which \ud800?", "choices": CHOICES, "answer": 0}, "unpaired surrogate"),
                     ({"question": QUESTION, "choices": [*CHOICES[:3], "\udfff"], "answer": 0}, "unpaired surrogate")]:
        assert why in item_of(bad), bad


def write_layouts(folder: Path) -> dict[str, Path]:
    rows = [{"question": f"{QUESTION} ({i})", "choices": CHOICES, "answer": i % 4} for i in range(6)]
    # a line that is JSON but no record, a string: counted as "not a record", never as a reason of its own text
    (folder / "mmlu.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{not json\n"a string"\n')
    pq.write_table(pa.Table.from_pylist(rows), folder / "mmlu.parquet")
    (folder / "mmlu.json").write_text(json.dumps(rows))
    with open(folder / "cmmlu.csv", "w", newline="", encoding="utf-8-sig") as f:
        writer = csv.writer(f)
        writer.writerow(["", "Question", "A", "B", "C", "D", "Answer"])
        writer.writerows([i, r["question"], *CHOICES, "ABCD"[r["answer"]]] for i, r in enumerate(rows))
    return {name: folder / name for name in ("mmlu.jsonl", "mmlu.parquet", "mmlu.json", "cmmlu.csv")}


def test_every_file_kind_gives_the_same_items_and_a_bad_record_is_counted(tmp_path):
    files = write_layouts(tmp_path)
    found = {name: read_items("b", str(path)) for name, path in files.items()}
    assert all(items == found["mmlu.parquet"][0] for items, _ in found.values())
    assert found["mmlu.jsonl"][1] == {"malformed JSON": 1, "not a record": 1} and found["cmmlu.csv"][1] == {}
    together, skipped = read_items("b", f"{tmp_path}/*.json*")  # a glob, comma-separated parts, folders
    assert len(together) == 6 and skipped[mc_items.REPEATED] == 6  # the same items in two files: each once
    assert len(read_items("b", str(tmp_path))[0]) == 6 and read_items("b", str(tmp_path))[1][mc_items.REPEATED] == 18


def test_a_file_over_the_limit_or_without_items_is_refused_by_name(tmp_path, monkeypatch):
    files = write_layouts(tmp_path)
    monkeypatch.setattr(mc_items, "MAX_FILE_BYTES", 100)
    with pytest.raises(ItemsError, match="mmlu.jsonl: over 100 bytes"):
        read_items("b", str(files["mmlu.jsonl"]))
    # compressed, the file is small: the limit holds for what it decompresses to
    packed = tmp_path / "mmlu.jsonl.gz"
    packed.write_bytes(gzip.compress(files["mmlu.jsonl"].read_bytes()))
    monkeypatch.setattr(mc_items, "MAX_FILE_BYTES", packed.stat().st_size + 1)
    with pytest.raises(ItemsError, match="mmlu.jsonl.gz: over .* bytes decompressed"):
        read_items("b", str(packed))
    monkeypatch.undo()
    (tmp_path / "empty.jsonl").write_text('{"text": "a document"}\n')
    with pytest.raises(ItemsError, match="no multiple-choice item .* no question"):
        read_items("b", str(tmp_path / "empty.jsonl"))
    with pytest.raises(ItemsError, match="no benchmark file"):
        read_items("b", str(tmp_path / "nothing-*.csv"))


def test_a_benchmark_from_elsewhere_is_read_within_bounds(tmp_path, monkeypatch):
    files = write_layouts(tmp_path)
    # a FIFO or a link to a device in a benchmark's folder (a tar from elsewhere): its open waited forever
    os.mkfifo(tmp_path / "hang.jsonl")
    with within(10), pytest.raises(ItemsError, match="hang.jsonl: not a regular file"):
        read_items("b", str(tmp_path))
    os.unlink(tmp_path / "hang.jsonl")
    os.symlink("/dev/zero", tmp_path / "zero.jsonl")
    with within(10), pytest.raises(ItemsError, match="zero.jsonl: not a regular file"):
        read_items("b", str(tmp_path))
    os.unlink(tmp_path / "zero.jsonl")
    os.symlink(tmp_path / "moved.jsonl", tmp_path / "dangling.jsonl")  # said as what it is
    with pytest.raises(ItemsError, match="dangling.jsonl: a link to nothing"):
        read_items("b", str(tmp_path))
    os.unlink(tmp_path / "dangling.jsonl")
    # one field past csv's own limit (131,072 characters) refused the whole file: now that record alone is left out
    with open(tmp_path / "long.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["Question", "A", "B", "C", "D", "Answer"])
        writer.writerow(["q" * 200_000, *CHOICES, "A"])
        writer.writerow(["What is Debian?", *CHOICES, "A"])
    items, skipped = read_items("b", str(tmp_path / "long.csv"))
    assert len(items) == 1 and skipped == {"no question (or over the size limit)": 1}
    # every record is kept until the subset is drawn: a benchmark's records are bounded
    monkeypatch.setattr(mc_items, "MAX_RECORDS", 5)
    with pytest.raises(ItemsError, match="over 5 records"):
        read_items("b", str(files["mmlu.jsonl"]))
    monkeypatch.setattr(mc_items, "MAX_JSON_BYTES", 100)  # a .json file is parsed whole
    with pytest.raises(ItemsError, match="mmlu.json cannot be read"):
        read_items("b", str(files["mmlu.json"]))


def test_a_repeated_item_is_read_once_and_one_repeated_with_another_answer_not_at_all(tmp_path):
    """Found by review (2026-12-07): the last copy's answer silently won ("Capital of France?" answered Rome)."""
    from trainer.mc_items import CONFLICTING, REPEATED

    records = [{"question": "Capital of France?", "choices": ["Paris", "Rome"], "answer": a} for a in (0, 1, 0)]
    records += [{"question": QUESTION, "choices": CHOICES, "answer": 0}] * 3
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    items, skipped = read_items("b", str(path))
    assert items == [Item(QUESTION, tuple(CHOICES), 0)] and skipped == {CONFLICTING: 3, REPEATED: 2}


def test_the_fixed_subset_is_the_same_in_any_file_order_and_mixes_the_file():
    items = [Item(f"q{i}", ("a", "b"), i % 2) for i in range(50)]
    chosen = fixed_subset(items, 10)
    assert chosen == fixed_subset(items[::-1] + items[:5], 10) and len(chosen) == 10
    assert max(int(item.question[1:]) for item in chosen) > 20  # not the first ten of the file


def test_prompts_and_pairs_encoded_as_lm_eval_encodes_them(tmp_path):
    from prep.tokenizer.encode import TokenizerFile
    from tests.shard_fixtures import sample_texts, write_text_shards

    write_text_shards(tmp_path / "shards", seq_len=128, files=("debian-faq.en",), parts=1)
    tokenizer = TokenizerFile.read(str(tmp_path / "shards" / "tokenizer.json"))
    encode = tokenizer.encoder()
    item = Item(QUESTION, tuple(CHOICES), 0)
    context, continuations = prompt(item, "cloze")
    assert context == f"Question: {QUESTION}\nAnswer:" and continuations == CHOICES
    letters, choices = prompt(item, "letters")
    assert letters.endswith("\nA. apt\nB. pacman\nC. emerge\nD. brew\nAnswer:") and choices == ["A", "B", "C", "D"]
    [(tokens, n)] = encode_pairs(encode, tokenizer.bos_id, [(context, "pacman")], 4096)
    ids, offsets = encode([context, context + " pacman"])
    whole, context_ids = ids[offsets[1]:], ids[:offsets[1]]
    assert tokens[0] == tokenizer.bos_id and list(tokens[1:]) == list(whole) and n == len(whole) - len(context_ids)
    [(cut, m)] = encode_pairs(encode, tokenizer.bos_id, [(context, "pacman")], 8)
    assert len(cut) == 9 and m == n and list(cut) == list(tokens[-9:])  # the context cut from the left

    # found by review (2026-12-07): 26 choices of real text in the `letters` style, each pair encoding the whole
    # context twice; its text is now cut first, to what the kept tokens need, with the same tokens as lm-eval's
    words = " ".join(sample_texts(["debian-faq.en"])).split()
    choices = tuple(" ".join(words[k * 300:(k + 1) * 300]) for k in range(26))
    long_context, letters = prompt(Item(QUESTION, choices, 3), "letters")
    seen = []

    def counted(texts):
        seen.extend(len(t) for t in texts)
        return encode(texts)

    start_from = pre_token_starts(tokenizer.json)

    def as_lm_eval(context, continuations, seq_len, encoder=encode):
        found = encode_pairs(encoder, tokenizer.bos_id, [(context, c) for c in continuations], seq_len, start_from)
        ids, offsets = encode([context] + [context + " " + c for c in continuations])
        for k, (got, n) in enumerate(found):
            whole = ids[offsets[k + 1]:offsets[k + 2]]
            assert list(got) == [tokenizer.bos_id, *whole][-(seq_len + 1):], (context[-40:], k)
            assert n == min(len(whole) - offsets[1], len(got) - 1), (context[-40:], k)

    as_lm_eval(long_context, letters, 256, counted)
    assert len(long_context) > 40_000 and len(seen) == 27 and max(seen) <= 32 * 257 + 40  # one context, 26 pairs
    # a run as long as the cut (one pre-token: not cut), runs across it, and a context cut where what is left
    # holds fewer tokens than are kept (encoded whole again): found by the day's review of the cut
    for run in ("x" * 20_000, "-" * 5_000 + " a", "word " * 4_000, "x" * 600 + " y" * 300, " " * 9_000 + "z"):
        as_lm_eval(run, ["x", "xx", "-", "A"], 16)
        as_lm_eval("q " * 300 + run, ["x", "a b"], 16)


def test_accuracy_is_lm_evals_acc_and_acc_norm_with_its_standard_error():
    lls = [np.array([-4.0, -6.0, -9.0]), np.array([-10.0, -9.0, -12.0]), np.array([-3.0, -2.0, -2.5])]
    chars = [np.array([3.0, 10.0, 20.0]), np.array([1.0, 8.0, 2.0]), np.array([1.0, 1.0, 1.0])]
    answers = [1, 1, 2]
    acc, se = accuracy(lls, answers, [np.ones(3)] * 3)
    assert acc == 1 / 3 and se == pytest.approx(np.std([0, 1, 0], ddof=1) / math.sqrt(3))
    norm, _ = accuracy(lls, answers, chars)  # -4/3 < -6/10 > -9/20: item 0 picks the third; item 1 the second
    assert norm == pytest.approx(1 / 3)
    assert accuracy([np.array([-1.0, -1.0])], [1], [np.ones(2)])[0] == 0  # a tie picks the first, as argmax


def test_a_batch_labels_only_the_continuation():
    class Tokenizer:
        pad_id, bos_id = 2, 0
        json = ""  # read only for a context long enough to cut: none here

        @staticmethod
        def encoder():
            def encode(texts):
                ids = [[ord(c) for c in text] for text in texts]
                return np.array(sum(ids, []), np.int32), np.cumsum([0] + [len(i) for i in ids])
            return encode

    benchmarks = Benchmarks(BenchmarksConfig(items=1), {"b": [Item("q?", ("yes", "no"), 0)]}, Tokenizer(), 512,
                            0, 1, torch_device())
    inputs, positions, cu, labels = benchmarks._batch(benchmarks.sequences)
    assert inputs.shape == labels.shape == (2, 128) and cu.tolist() == [0, 128, 256]
    for row, (tokens, n) in enumerate(benchmarks.sequences):
        predicted = labels[row][labels[row] != IGNORE].tolist()
        assert predicted == tokens[-n:].tolist() and "".join(map(chr, predicted)) in (" yes", " no")


def torch_device():
    import torch

    return torch.device("cpu")


def test_the_record_is_checked_field_by_field_and_read_within_bounds(tmp_path):
    record = new_record({"mmlu": [("test/a.jsonl", 10, "0" * 64)]})
    assert validate_record(json.loads(json.dumps(record))) == {"mmlu": [("test/a.jsonl", 10, "0" * 64)]}
    for change in ({"format_version": "2"}, {"benchmarks": []}, {"benchmarks": {"mmlu": []}},
                   {"benchmarks": {"mmlu": [{"file": "a", "bytes": -1, "sha256": "0" * 64}]}},
                   {"benchmarks": {"mmlu": [{"file": "a", "bytes": 1, "sha256": "A" * 64}]}},
                   {"benchmarks": {"mmlu": [{"file": "a", "bytes": 10 ** 40, "sha256": "0" * 64}]}}, {"extra": 1}):
        (tmp_path / "r.json").write_text(json.dumps({**record, **change}))
        with pytest.raises(RecordError), open(tmp_path / "r.json", "rb") as f:
            read_record(f)
    (tmp_path / "r.json").write_bytes(b" " * (2 << 20))
    with pytest.raises(RecordError, match="larger than"), open(tmp_path / "r.json", "rb") as f:
        read_record(f)


def test_the_pipelines_record_and_the_loops_warning(tmp_path):
    from loaders.shard_reader import ShardSource
    from spark_stages.decontaminate import Config, decontamination_record
    from spark_stages.outputs import write_json
    from tests.shard_fixtures import write_text_shards

    shards = tmp_path / "shards"
    shards.mkdir()
    write_text_shards(shards, seq_len=128, files=("debian-faq.en",), parts=1)
    files = write_layouts(tmp_path)
    # the pipeline hands the record to the shards stage, which commits it with the index (tests/spark_stages)
    write_json(shards / RECORD_FILE, decontamination_record(Config(benchmarks={"mmlu": str(files["mmlu.jsonl"])})))
    with open(shards / RECORD_FILE, "rb") as f:
        record = read_record(f)
    assert record == {"mmlu": [("mmlu.jsonl", files["mmlu.jsonl"].stat().st_size,
                                file_sha256(str(files["mmlu.jsonl"])))]}
    source = {"default": ShardSource(str(shards))}
    copy = tmp_path / "renamed.jsonl"  # the same bytes under another name: cut
    copy.write_bytes(files["mmlu.jsonl"].read_bytes())
    assert warnings({"mmlu": [str(copy)]}, source) == []
    found = warnings({"mmlu": [str(copy)], "cmmlu": [str(files["cmmlu.csv"])]}, source)
    assert len(found) == 1 and found[0].startswith("benchmark cmmlu: ") and "decontaminated against mmlu" in found[0]
    (shards / RECORD_FILE).unlink()
    assert "decontamination.json is missing" in warnings({"mmlu": [str(copy)]}, source)[0]
    os.mkfifo(shards / RECORD_FILE)  # a FIFO in its place hung rank 0 at the start
    with within(10):
        assert "not a regular file" in warnings({"mmlu": [str(copy)]}, source)[0]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_a_benchmark_file_opening_with_a_byte_order_mark_keeps_its_first_item(tmp_path, suffix):
    """Found by a newcomer's run through the docs (2026-12-08): the decontaminate job read a JSON-lines file's
    first item after a byte order mark, the training loop left it out as malformed JSON."""
    rows = [{"question": f"Which number is {i}?", "choices": ["one", "two", "three", "four"], "answer": i % 4}
            for i in range(2)]
    if suffix == ".jsonl":
        text = "".join(json.dumps(r) + "\n" for r in rows)
    elif suffix == ".json":
        text = json.dumps(rows)
    else:
        text = "question,A,B,C,D,answer\n" + "".join(f"{r['question']},one,two,three,four,{'ABCD'[r['answer']]}\n"
                                                      for r in rows)
    (tmp_path / f"b{suffix}").write_bytes(b"\xef\xbb\xbf" + text.encode())
    items, skipped = read_items("b", str(tmp_path / f"b{suffix}"))
    assert len(items) == 2 and not skipped, skipped
