"""The tokenizer job on Spark: outputs, loading with tokenizers and transformers, the report, the
distributed E-step against the local one, bad input, and spark-submit as users run it."""

import json
from collections import Counter

import numpy as np
import pytest
from tokenizers import Tokenizer

import spark_stages.tokenizer as stage
from prep.ingest.inputs import expand_inputs, single_source
from prep.ingest.readers import Document, read_file
from prep.tokenizer.base import BOS, EOS, PAD
from prep.tokenizer.encode import TokenizerFile, encode_documents
from prep.tokenizer.superwords import SuperwordConfig
from prep.tokenizer.unigram import count_pre_tokens as count_locally
from prep.tokenizer.unigram import local_e_step
from spark_stages.ingest import SOURCE
from spark_stages.persisted import persisted
from spark_stages.runner import run_stage
from spark_stages.tokenizer import STAGE, Config, count_pre_tokens, run, spark_e_step, with_hash
from tests.spark_stages.conftest import spark_submit

pytestmark = pytest.mark.spark

VOCAB = 2048


@pytest.fixture(scope="module")
def trained(spark, sample_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("tokenizer")
    cfg = Config(vocab_size=VOCAB, sample_bytes=4_000_000, held_out=0.05)
    report = run(spark, single_source(str(sample_dir)), cfg, str(out))
    return out, report


def test_outputs_load_with_tokenizers_and_transformers(trained):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    out, _ = trained
    written = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))  # .tokenmill: outputs.py
    assert written == ["bpe_same_size.json", "report.json", "tokenizer.json", "tokenizer_config.json"]
    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
    tokenizer.encode_special_tokens = True  # not kept in tokenizer.json: the README tells users to set it
    fast = PreTrainedTokenizerFast(tokenizer_file=str(out / "tokenizer.json"), split_special_tokens=True)
    auto = AutoTokenizer.from_pretrained(str(out))  # tokenizer_config.json sets split_special_tokens
    text = "The Debian 软件包管理 tools: apt-get install 12345 <|eos|> <|bos|><|pad|>"
    ids = tokenizer.encode(text).ids
    assert fast.encode(text) == ids == auto.encode(text) == encode_documents(TokenizerFile.read(
        str(out / "tokenizer.json")), [text])[0][1:-1].tolist()  # what the shards job writes inside <bos> … <eos>
    assert not {0, 1, 2} & set(ids), "a special token's spelling in a document became a control token"
    assert fast.decode(ids) == text and auto.eos_token_id == 1 and auto.pad_token == PAD
    assert tokenizer.get_vocab_size() == VOCAB and tokenizer.token_to_id(BOS) == 0 and tokenizer.token_to_id(EOS) == 1


def test_report_has_every_figure_and_a_lossless_held_out(trained):
    out, report = trained
    assert json.loads((out / "report.json").read_text()) == report
    held = report["held_out"]
    assert held["docs"] > 100 and held["round_trip_exact"] == held["docs"]
    for kind in ("en", "zh", "all"):
        for figure in ("trained", "bpe_same_size"):
            assert held[figure][kind]["bytes_per_token"] > 1 and held[figure][kind]["chars_per_token"] > 0.5
    assert 0 < held["trained"]["renyi_efficiency"] < 1 and 0 < held["trained"]["vocab_used_share"] <= 1
    assert held["gain"]["all"] == pytest.approx(
        held["trained"]["all"]["bytes_per_token"] / held["bpe_same_size"]["all"]["bytes_per_token"] - 1, abs=1e-3)
    training = report["training"]
    assert training["pieces"] == VOCAB - 19 and training["distinct_pre_tokens"] > 10_000
    assert report["training_seconds"] > 0 and report["peak_memory_bytes"] > 100 << 20


def test_the_sample_reaches_the_driver_in_bounded_partitions_in_hash_order(spark, sample_dir, monkeypatch):
    """A 1 GB sample in spark.sql.shuffle.partitions pieces was lost as task results by a local driver:
    the sample now comes in pieces of about SAMPLE_PARTITION_BYTES (here 32 KB), in the order of orderBy."""
    from pyspark.sql import functions as F

    read = read_file(expand_inputs(str(sample_dir / "debian-reference.en*"))[0])
    texts = [r.text for r in read if isinstance(r, Document)]
    docs = with_hash(spark.createDataFrame([(str(i), t, 0) for i, t in enumerate(texts)],
                                           f"id string, text string, {SOURCE} int"))
    training = docs.withColumn("v", docs.u).withColumn("keep", F.lit(1.0))
    monkeypatch.setattr(stage, "SAMPLE_PARTITION_BYTES", 32 << 10)
    size = sum(len(t.encode()) for t in texts)
    with persisted() as kept:
        sample, total, rate = stage._sample(training, size // 2, kept)
        parts = sample.rdd.glom().map(lambda rows: sum(len(r.text.encode()) for r in rows)).collect()
        got = [row.text for row in sample.toLocalIterator()]
    expected = [row.text for row in training.where(F.col("v") < rate).orderBy("u", "id").collect()]
    assert total == size and rate == pytest.approx(0.5, abs=1e-3) and got == expected
    assert len(parts) == -(-size // 2 // (32 << 10)) > 4 and max(parts) < 4 * (32 << 10) + max(map(len, texts))


def test_documents_of_one_id_come_in_one_order_whatever_the_input_order(spark, sample_dir):
    """An id may repeat in raw input: the held-out texts (cut at MAX_HELD_OUT_BYTES) and the training sample
    had come in the input's order for documents of one id (one hash), so another reading of the same files
    could hold out and train on other text; the text's hash now orders them."""
    from pyspark.sql import functions as F

    read = read_file(expand_inputs(str(sample_dir / "debian-reference.en*"))[0])
    texts = [r.text for r in read if isinstance(r, Document)][:40]
    orders = []
    for rows in (texts, texts[::-1]):
        frame = spark.createDataFrame([("one id", t, 0) for t in rows], f"id string, text string, {SOURCE} int")
        docs = with_hash(frame.coalesce(1))
        training = docs.withColumn("v", F.lit(0.0)).withColumn("keep", F.lit(1.0))
        with persisted() as kept:
            sample, _, _ = stage._sample(training, 1 << 40, kept)
            orders.append((stage.held_out_texts(docs, 1.0), [row.text for row in sample.toLocalIterator()]))
    assert sorted(orders[0][0]) == sorted(texts) and orders[0] == orders[1]


@pytest.mark.parametrize("superwords", [False, True])
def test_spark_e_steps_equal_the_local_ones(spark, sample_dir, superwords):
    texts = [r.text for r in read_file(expand_inputs(str(sample_dir / "debian-faq.en*"))[0]) if isinstance(r, Document)]
    docs = spark.createDataFrame([(t,) for t in texts], "text string").repartition(3)
    pieces = ["Ġthe", "Ġa", "in", "ing", "Ġin", "ĠofĠthe"] + [p for p in Counter("".join(count_locally(texts)))]
    local_step = local_e_step(count_locally(texts, superwords))
    with persisted() as kept:
        spark_step = spark_e_step(spark, count_pre_tokens(docs, kept, superwords))
        for scores in (np.linspace(-1, -5, len(pieces)), np.linspace(-5, -1, len(pieces))):  # a new model each step
            spark_freq, spark_tokens = spark_step(pieces, scores)
            local_freq, local_tokens = local_step(pieces, scores)
            assert spark_tokens == local_tokens and np.array_equal(spark_freq, local_freq)


def test_superword_tokenizer_loads_everywhere_and_reports_its_superwords(spark, sample_dir, tmp_path):
    from transformers import AutoTokenizer

    cfg = Config(vocab_size=VOCAB, sample_bytes=4_000_000, superword=SuperwordConfig(superwords=True))
    report = run(spark, single_source(str(sample_dir)), cfg, str(tmp_path))
    held, training = report["held_out"], report["training"]
    assert held["round_trip_exact"] == held["docs"] > 100
    assert 0 < training["superwords"] <= 0.25 * (VOCAB - 19) and training["superword_seed_pieces"] > 0
    assert held["trained"]["superword_token_share"] > 0.05 and held["bpe_same_size"]["superword_token_share"] == 0
    assert max(map(len, held["trained"]["longest_pieces_used"])) > 16
    text = "Install the package with apt-get install 12345, then read the 软件包 manual. <|eos|>"
    ids = AutoTokenizer.from_pretrained(str(tmp_path)).encode(text)
    assert ids == encode_documents(TokenizerFile.read(str(tmp_path / "tokenizer.json")), [text])[0][1:-1].tolist()
    assert not {0, 1, 2} & set(ids)


def test_bad_arguments_exit_with_a_message(tmp_path, capsys):
    assert run_stage(STAGE, ["--input", str(tmp_path / "missing"), "--output", str(tmp_path / "out")]) == 2
    assert "missing" in capsys.readouterr().err
    assert run_stage(STAGE, ["--input", str(tmp_path), "--output", str(tmp_path / "out"), "--vocab-size", "100"]) == 2
    assert "cannot hold" in capsys.readouterr().err
    assert run_stage(STAGE, ["--input", str(tmp_path), "--output", str(tmp_path / "out"), "--algorithm", "wp"]) == 2
    assert "unknown algorithm 'wp'" in capsys.readouterr().err


@pytest.mark.cluster  # spark-submit starts a JVM of its own: with the cluster tests (make test-cluster)
def test_spark_submit_trains_a_baseline_and_warns_when_the_corpus_is_too_small(tmp_path):
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": str(i), "text": f"line {i}: apt-get install package-{i % 7}"}) + "\n" for i in range(200))
        + '{"id": "no text"}\n')
    done = spark_submit("train_tokenizer", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"),
                        "--algorithm", "bpe", "--vocab-size", "1024", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "filled with" in report["warning"] and "warning: the corpus gave" in done.stdout
    assert report["training"]["quarantined_records"] == 1  # the line without text is counted, not trained on
    assert Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json")).get_vocab_size() == 1024
