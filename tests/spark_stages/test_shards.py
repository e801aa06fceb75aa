"""The tokenize job on Spark: every token once, decodable documents, byte-identical output whatever
the partitioning, a valid index, padding within budget, quarantine, bad arguments, spark-submit."""

import json
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.ingest.inputs import expand_inputs, single_source
from prep.ingest.readers import Document, read_file
from prep.packing import PackConfig
from prep.tokenizer.bpe import train_bpe
from prep.tokenizer.encode import TokenizerFile
from schemas.validate import validate
from spark_stages.runner import run_stage
from spark_stages.shards import STAGE, Config, group_bounds, run
from tests.conftest import write_lines
from tests.spark_stages.conftest import spark_submit

pytestmark = pytest.mark.spark

SEQ = 1024


@pytest.fixture(scope="module")
def corpus(sample_dir, tmp_path_factory):
    """Three of the sample's files as Parquet, in one file, in four, and in one file of many row groups
    (which the encoding tasks split); as JSON Lines; and a tokenizer."""
    folder = tmp_path_factory.mktemp("tokenize-input")
    docs = [r for name in ("debian-faq.en*", "maint-guide.zh*", "licenses.en*")
            for f in expand_inputs(str(sample_dir / name)) for r in read_file(f) if isinstance(r, Document)]
    table = pa.table({"id": [d.id for d in docs], "text": [d.text for d in docs]})
    (folder / "one").mkdir()
    pq.write_table(table, folder / "one" / "part-0.parquet")
    (folder / "four").mkdir()
    for i in range(4):
        pq.write_table(table.take(np.arange(i, len(docs), 4)[::-1]), folder / "four" / f"part-{i}.parquet")
    (folder / "groups").mkdir()
    pq.write_table(table, folder / "groups" / "part-0.parquet", row_group_size=25)
    write_lines(folder / "jsonl" / "docs.jsonl", table.to_pylist(), mkdir=True)
    tokenizer = train_bpe([d.text for d in docs], 2048)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder, [d.text for d in docs], tokenizer


@pytest.fixture(scope="module")
def shards(spark, corpus, tmp_path_factory):
    folder, _, _ = corpus
    out = {}
    for name, partitions in (("one", 2), ("four", 5), ("groups", 3), ("jsonl", 2)):
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        target = tmp_path_factory.mktemp(f"shards-{name}")
        cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ), shard_mb=1 / 16)
        index = run(spark, single_source(str(folder / name)), cfg, str(target))
        out[name] = (target, index)
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    return out


def read_rows(folder):
    rows = []
    for path in sorted(folder.glob("shard-*.arrow")):
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
        rows += zip(table.column("tokens").to_pylist(), table.column("cu_seqlens").to_pylist())
    return rows


@pytest.mark.parametrize("other", ["four", "groups", "jsonl"])
def test_byte_identical_whatever_the_partitioning_and_the_input_format(shards, other):
    # Parquet in one task, in four files, in row groups that tasks split; JSON Lines (Spark's reader)
    (one, index_one), (four, index_four) = shards["one"], shards[other]
    assert index_one == index_four and len(index_one["shards"]) > 1
    assert (one / "index.json").read_bytes() == (four / "index.json").read_bytes()
    for entry in index_one["shards"]:
        assert (one / entry["file"]).read_bytes() == (four / entry["file"]).read_bytes()


def test_parquet_documents_without_text_are_quarantined(spark, tmp_path, corpus):
    # A null text, and a second file without the column (its schema is not the first's: read by the readers)
    folder, texts, _ = corpus
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": [texts[0], None, texts[1]]}), tmp_path / "in" / "0.parquet")
    pq.write_table(pa.table({"id": ["d", "e"], "body": ["x", "y"]}), tmp_path / "in" / "1.parquet")
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ))
    index = run(spark, single_source(str(tmp_path / "in")), cfg, str(tmp_path / "shards"))
    assert index["totals"]["documents"] == 2 and index["totals"]["quarantined"] == 3
    assert sorted(pq.read_table(tmp_path / "shards" / "quarantine").column("error").to_pylist()) == [
        "missing field 'text'", "missing field 'text'", "text is null"]
    assert validate(tmp_path / "shards") == []


def test_parquet_documents_over_the_record_limit_are_quarantined_not_encoded(spark, tmp_path, corpus):
    """Parquet that is already a tokenmill output is encoded as the tasks read it: a text of any size was
    tokenized into the shards (the readers quarantine records over max_record_bytes)."""
    from prep.ingest.readers import ReaderConfig

    folder, texts, _ = corpus
    limit = ReaderConfig().max_record_bytes
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": [texts[0], "w " * (limit // 2 + 1), texts[1]]}),
                   tmp_path / "in" / "0.parquet")
    # a row group of one row over twice the limit: its text is not even read by the encoding task
    pq.write_table(pa.table({"id": ["d"], "text": ["z" * (2 * limit + 1)]}), tmp_path / "in" / "1.parquet")
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ))
    index = run(spark, single_source(str(tmp_path / "in")), cfg, str(tmp_path / "shards"))
    assert index["totals"]["documents"] == 2 and index["totals"]["quarantined"] == 2
    quarantine = pq.read_table(tmp_path / "shards" / "quarantine")
    assert quarantine.column("error").to_pylist() == [f"record over {limit} bytes"] * 2
    assert validate(tmp_path / "shards") == []


def test_every_token_once_and_whole_documents_decode_to_the_input(shards, corpus):
    folder, texts, tokenizer = corpus
    out, index = shards["one"]
    assert validate(out) == []
    bos, eos, pad = index["bos_id"], index["eos_id"], index["pad_id"]
    expected, fitting = Counter(), []  # fitting: documents that fit in a row, so are never cut
    for text, encoding in zip(texts, tokenizer.encode_batch(texts, add_special_tokens=False)):
        expected.update([bos, *encoding.ids, eos])
        if len(encoding.ids) + 2 <= SEQ:
            fitting.append(text)
    found, whole = Counter(), []
    for tokens, cu in read_rows(out):
        assert len(tokens) % 128 == 0 and len(tokens) <= SEQ and set(tokens[cu[-1]:]) <= {pad}
        for lo, hi in zip(cu[:-1], cu[1:]):
            found.update(tokens[lo:hi])
            if tokens[lo] == bos and tokens[hi - 1] == eos:
                whole.append(tokenizer.decode(tokens[lo + 1:hi - 1], skip_special_tokens=False))
    assert found == expected  # nothing lost, nothing doubled
    assert index["totals"]["real_tokens"] == sum(expected.values()) and index["totals"]["documents"] == len(texts)
    assert sorted(whole) == sorted(fitting) and len(fitting) > 20
    totals = index["totals"]  # (the waste bar is for the sample in one group: tests/jobs/test_pipeline.py)
    assert totals["padding_waste"] == pytest.approx(1 - totals["real_tokens"] / totals["tokens"], abs=1e-6)


def test_index_describes_the_tokenizer(shards, corpus):
    folder, _, tokenizer = corpus
    _, index = shards["one"]
    assert index["tokenizer_sha256"] == TokenizerFile.read(str(folder / "tokenizer.json")).sha256
    assert index["vocab_size"] == 2048 == index["embedding_size"] and index["seq_len"] == SEQ
    assert (index["bos_id"], index["eos_id"], index["pad_id"]) == (0, 1, 2) and index["compression_level"] == 3


def test_bad_records_are_quarantined_and_bad_arguments_exit_2(tmp_path, corpus, capsys):
    folder, _, _ = corpus
    tokenizer = str(folder / "tokenizer.json")
    # A readable input, so that each call fails on the argument it names and nothing else.
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "some text"}\n')
    documents = str(tmp_path / "in.jsonl")
    assert run_stage(STAGE, ["--input", documents, "--tokenizer", tokenizer, "--output", str(tmp_path / "o"),
                             "--seq-len", "1000"]) == 2
    assert "multiple of 128" in capsys.readouterr().err
    (tmp_path / "not-a-tokenizer.json").write_text("{}")
    assert run_stage(STAGE, ["--input", documents, "--tokenizer", str(tmp_path / "not-a-tokenizer.json"),
                             "--output", str(tmp_path / "o")]) == 2
    assert "not a tokenizers file" in capsys.readouterr().err


def test_an_input_without_documents_gives_an_empty_index_and_its_quarantine(spark, tmp_path, corpus):
    folder, _, _ = corpus
    (tmp_path / "in.jsonl").write_text('{"id": "x"}\n{broken\n')
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ))
    index = run(spark, single_source(str(tmp_path / "in.jsonl")), cfg, str(tmp_path / "shards"))
    assert index["shards"] == [] and index["totals"]["documents"] == 0 and index["totals"]["quarantined"] == 2
    assert validate(tmp_path / "shards") == []
    written = sorted(p.name for p in (tmp_path / "shards").iterdir() if not p.name.startswith("."))
    assert written == ["index.json", "quarantine"]


@pytest.mark.parametrize("groups", [1, 2, 3, 7, 1000, 2**20 + 1])
def test_groups_are_equal_ranges_of_the_key_that_cover_it_once(groups):
    bounds = [group_bounds(g, groups) for g in range(groups)]
    assert bounds[0][0] == 0 and bounds[-1][1] == 2**64
    assert all(high == low for (_, high), (low, _) in zip(bounds, bounds[1:]))  # no gap, no overlap
    widths = {high - low for low, high in bounds}
    assert max(widths) - min(widths) <= 2**32  # equal up to one step of the top 32 bits
    keys = np.random.default_rng(groups).integers(0, 2**64, 1000, dtype=np.uint64, endpoint=False).tolist()
    edges = [edge for low, _ in bounds[1:1000] for edge in (low - 1, low)]  # either side of each bound
    for key in keys + edges:  # the group a key falls in by bounds is the one its top bits name
        group = ((key >> 32) * groups) >> 32
        low, high = bounds[group]
        assert low <= key < high


@pytest.mark.cluster  # spark-submit starts a JVM of its own: with the cluster tests (make test-cluster)
def test_spark_submit_writes_shards_and_quarantines_bad_lines(tmp_path, corpus):
    folder, texts, _ = corpus
    lines = [json.dumps({"id": str(i), "text": t}) for i, t in enumerate(texts[:20])] + ['{"id": "x"}', "{broken"]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    done = spark_submit("shards", "--input", str(tmp_path / "in.jsonl"), "--tokenizer", str(folder / "tokenizer.json"),
                        "--output", str(tmp_path / "shards"), "--seq-len", "512", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    index = json.loads((tmp_path / "shards" / "index.json").read_text())
    assert index["totals"]["documents"] == 20 and index["totals"]["quarantined"] == 2
    assert pq.read_table(tmp_path / "shards" / "quarantine").num_rows == 2
    assert validate(tmp_path / "shards") == []


def test_a_setting_the_user_gave_outlives_the_stages_own(spark):
    from spark_stages.session import session_conf

    key = "spark.sql.files.minPartitionNum"
    with session_conf(spark, {key: "7"}):
        assert spark.conf.get(key) == "7"
    assert spark.conf.get(key, None) is None  # unset again
    spark.conf.set(key, "3")  # as --conf would
    try:
        with session_conf(spark, {key: "7"}):
            assert spark.conf.get(key) == "3"
        assert spark.conf.get(key) == "3"
    finally:
        spark.conf.unset(key)


def _pieces(folder) -> set[tuple[int, ...]]:
    """Every document piece of every row of a shards folder, as a tuple of its tokens."""
    from schemas.index import ShardIndex
    from schemas.shards import read_checked_shard

    index = ShardIndex.from_json(json.loads((folder / "index.json").read_text()))
    found = set()
    for entry in index.shards:
        table = read_checked_shard(folder / entry.file, entry)
        for tokens, cu in zip(table.column("tokens").to_pylist(), table.column("cu_seqlens").to_pylist()):
            found |= {tuple(tokens[a:b]) for a, b in zip(cu, cu[1:])}
    return found


def test_shards_stopped_while_their_held_out_part_is_written_are_no_complete_output(spark, corpus, tmp_path,
                                                                                     monkeypatch):
    """Found by the kill review of 2026-12-07: index.json came with the training shards' commit, so a job killed
    while writing heldout/ (a second pass) left an output the validator passed, a trainer read without held-out
    loss; index.json now comes last, after heldout/."""
    import spark_stages.shards as shards_module
    from spark_stages.shards import HELDOUT

    folder, _, _ = corpus
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ), shard_mb=1 / 16, heldout_share=0.2)
    whole = run(spark, single_source(str(folder / "one")), cfg, str(tmp_path / "whole"))
    write = shards_module.write_shards

    def dies_holding_out(spark, sources, cfg, out, part, *more, **options):
        if part == HELDOUT:
            raise KeyboardInterrupt("killed while writing the held-out shards")
        return write(spark, sources, cfg, out, part, *more, **options)

    monkeypatch.setattr(shards_module, "write_shards", dies_holding_out)
    for out in ("fresh", "whole"):  # a new output, and one replacing a complete one
        with pytest.raises(KeyboardInterrupt):
            run(spark, single_source(str(folder / "one")), cfg, str(tmp_path / out))
        assert not (tmp_path / out / "index.json").exists() and validate(tmp_path / out) != []
    monkeypatch.undo()
    again = run(spark, single_source(str(folder / "one")), cfg, str(tmp_path / "fresh"))
    assert again == whole and validate(tmp_path / "fresh") == [] and validate(tmp_path / "fresh" / HELDOUT) == []
    assert not list((tmp_path / "fresh").glob("*.pending"))


def test_a_held_out_share_chosen_by_id_shares_no_document_with_the_training_shards(spark, corpus, shards, tmp_path):
    from prep.tokenizer.encode import encode_documents
    from spark_stages.shards import HELDOUT, id_keys, in_part

    folder, _, _ = corpus
    table = pq.read_table(folder / "one")
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ), shard_mb=1 / 16, heldout_share=0.2)
    index = run(spark, single_source(str(folder / "one")), cfg, str(tmp_path / "s"))
    held = in_part(id_keys(table.column("id").combine_chunks()), HELDOUT, 0.2)
    assert 0 < held.sum() < len(held) and index[HELDOUT]["totals"]["documents"] == held.sum()
    assert index["totals"]["documents"] == len(held) - held.sum()
    _, whole = shards["one"]
    assert index["totals"]["real_tokens"] + index[HELDOUT]["totals"]["real_tokens"] == whole["totals"]["real_tokens"]
    assert validate(tmp_path / "s") == [] and validate(tmp_path / "s" / HELDOUT) == []
    training, heldout = _pieces(tmp_path / "s"), _pieces(tmp_path / "s" / HELDOUT)
    encoded = encode_documents(TokenizerFile.read(str(folder / "tokenizer.json")), table.column("text").to_pylist())
    firsts = [tuple(int(t) for t in doc[:SEQ]) for doc in encoded]  # all of a document, or its first row's part
    copies = Counter(firsts)  # (the same text under two ids, in both parts, is not one document)
    checked = [(first, is_held) for first, is_held in zip(firsts, held.tolist()) if copies[first] == 1]
    assert sum(h for _, h in checked) > 0 and sum(not h for _, h in checked) > 0
    for first, is_held in checked:
        assert (first in heldout, first in training) == (is_held, not is_held)


def test_the_quarantine_is_one_file_in_the_records_order_whatever_the_tasks(spark, tmp_path, corpus):
    # written as read, its files followed the read's tasks, and index.json's quarantine_checksum the cores
    from tests.spark_stages.conftest import OTHER_CLUSTER, spark_settings

    folder, texts, _ = corpus
    for i in range(3):
        write_lines(tmp_path / "in" / f"{i}.jsonl", [{"id": f"{i}-a", "text": texts[i]}, b"{broken " + bytes([48 + i]),
                                                     {"id": f"{i}-b", "text": texts[i + 3]}, b"[1, 2]"], mkdir=True)
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ))
    index = run(spark, single_source(str(tmp_path / "in")), cfg, str(tmp_path / "a"))
    with spark_settings(spark, OTHER_CLUSTER):
        again = run(spark, single_source(str(tmp_path / "in")), cfg, str(tmp_path / "b"))
    assert index["totals"]["quarantined"] == 6 and index == again
    assert [p.name for p in (tmp_path / "a" / "quarantine").glob("*.parquet")] == ["part-00000.parquet"]
    rows = pq.read_table(tmp_path / "a" / "quarantine").to_pylist()
    assert [(r["file"], r["line"]) for r in rows] == [(f"{i}.jsonl", line) for i in range(3) for line in (2, 4)]


def test_a_large_quarantine_is_written_in_files_by_the_records_hash(spark, tmp_path, corpus, monkeypatch):
    # one file for every broken record was one task sorting hundreds of millions of them
    import spark_stages.shards as shards_module
    from tests.spark_stages.conftest import OTHER_CLUSTER, spark_settings

    folder, texts, _ = corpus
    for i in range(3):
        write_lines(tmp_path / "in" / f"{i}.jsonl", [{"id": f"{i}-a", "text": texts[i]}, *[b"{broken"] * 5, b"[1]"],
                    mkdir=True)
    monkeypatch.setattr(shards_module, "QUARANTINE_FILE_RECORDS", 5)
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ))
    index = run(spark, single_source(str(tmp_path / "in")), cfg, str(tmp_path / "a"))
    with spark_settings(spark, OTHER_CLUSTER):
        again = run(spark, single_source(str(tmp_path / "in")), cfg, str(tmp_path / "b"))
    assert index["totals"]["quarantined"] == 18 and index == again
    files = sorted((tmp_path / "a" / "quarantine").glob("*.parquet"))
    assert [p.name for p in files] == [f"part-{i:05d}.parquet" for i in range(4)]
    parts = [pq.read_table(p).to_pylist() for p in files]
    assert sorted((r["file"], r["line"]) for part in parts for r in part) == sorted(
        (f"{i}.jsonl", line) for i in range(3) for line in range(2, 8))
    for part in parts:
        assert [(r["file"], r["line"]) for r in part] == sorted((r["file"], r["line"]) for r in part)


def test_packing_groups_are_bounded_by_their_documents_and_the_shards_by_what_an_index_lists(spark, tmp_path, corpus,
                                                                                            monkeypatch):
    # 4,000,000 empty documents were one group (a packing task of 1.7 GB: groups came from the text alone);
    # a --shard-mb of one byte wrote a shard a row, for hours
    import spark_stages.shards as shards_module
    from prep.ingest.inputs import InputError

    folder, _, _ = corpus
    cfg = Config(tokenizer=str(folder / "tokenizer.json"), pack=PackConfig(SEQ))
    whole = run(spark, single_source(str(folder / "one")), cfg, str(tmp_path / "whole"))
    monkeypatch.setattr(shards_module, "MAX_GROUP_DOCUMENTS", 10)
    grouped = run(spark, single_source(str(folder / "one")), cfg, str(tmp_path / "grouped"))
    documents = whole["totals"]["documents"]
    assert whole["totals"]["shards"] == 1 and grouped["totals"]["shards"] >= documents // 10 > 1
    assert (grouped["totals"]["documents"], grouped["totals"]["real_tokens"]) == (documents,
                                                                                whole["totals"]["real_tokens"])
    # documents of one id (a constant id column) spread over the groups as any others do: the group was the id's
    table = pq.read_table(folder / "one")
    (tmp_path / "same").mkdir()
    pq.write_table(table.set_column(0, "id", pa.array(["same"] * table.num_rows)), tmp_path / "same" / "0.parquet")
    one_id = run(spark, single_source(str(tmp_path / "same")), cfg, str(tmp_path / "one-id"))
    assert one_id["totals"]["shards"] >= documents // 10 and one_id["totals"]["documents"] == documents
    monkeypatch.setattr(shards_module, "MAX_SHARDS", 3)
    with pytest.raises(InputError, match="shards; an index lists at most 3 .give a larger --shard-mb"):
        run(spark, single_source(str(folder / "one")), Config(tokenizer=cfg.tokenizer, pack=PackConfig(SEQ),
                                                              shard_mb=1 / 64), str(tmp_path / "tiny"))
    # where the documents, not the text, make the shards, a larger --shard-mb would not help: the message says so
    with pytest.raises(InputError, match=f"{documents:,} documents make .* at most 10 documents each; an index lists "
                                         "at most 3 .split the input"):
        run(spark, single_source(str(folder / "one")), cfg, str(tmp_path / "many"))
