"""`python -m jobs.pipeline` on the embedded sample, as `make shards` runs it: every stage's output,
valid shards, the padding budget, and every deduplicated document's tokens in the shards."""

import hashlib
import json

import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from schemas.decontamination import RECORD_FILE, read_record
from schemas.validate import validate
from tests.conftest import write_lines
from tests.decontam_fixtures import paragraphs
from tests.spark_stages.conftest import run_module

pytestmark = pytest.mark.spark
ITEMS = paragraphs(["python-docs.en"], 20, 80)[10:60:10]  # five paragraphs of the sample's Python tutorial


@pytest.fixture(scope="module")
def pipeline(sample_dir, tmp_path_factory):
    """The pipeline on the sample with a benchmark of five of its own paragraphs (decontaminated after dedup)."""
    out = tmp_path_factory.mktemp("pipeline")
    write_lines(out.parent / "faq-items.jsonl", [{"id": f"faq-{i}", "text": t} for i, t in enumerate(ITEMS)])
    done = run_module("pipeline", "--input", str(sample_dir), "--output", str(out), "--vocab-size", "4096",
                      "--benchmark", f"faq={out.parent / 'faq-items.jsonl'}")
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout


def test_every_stage_writes_its_output(pipeline):
    out, stdout = pipeline
    for marker in ("clean/stats.json", "dedup/stats.json", "decontaminate/stats.json", "tokenizer/report.json",
                   "tokenizer/tokenizer.json", "shards/index.json", "shards/heldout/index.json"):
        assert (out / marker).is_file(), marker
    assert "padding waste" in stdout and "decontaminate:" in stdout and "held out:" in stdout
    assert validate(out / "shards") == [] and validate(out / "shards" / "heldout") == []
    with open(out / "shards" / RECORD_FILE, "rb") as f:  # the benchmarks cut from the shards, for the loop
        record = read_record(f)
    items = (out.parent / "faq-items.jsonl").read_bytes()
    assert record == {"faq": [("faq-items.jsonl", len(items), hashlib.sha256(items).hexdigest())]}
    assert not (out / "shards" / "heldout" / RECORD_FILE).exists()


def test_decontamination_runs_after_dedup_and_before_the_tokenizer_and_the_shards(pipeline):
    out, _ = pipeline
    stats = json.loads((out / "decontaminate" / "stats.json").read_text())
    assert stats["input"] == json.loads((out / "dedup" / "stats.json").read_text())["kept"]
    before = [" ".join(t.split()) for t in pq.read_table(out / "dedup" / "docs", columns=["text"]).column("text")
              .to_pylist()]
    present = [item for item in ITEMS if any(item in text for text in before)]  # those cleaning and dedup kept
    assert present and len(present) <= stats["benchmarks"]["faq"]["items_found"] <= len(ITEMS)
    assert stats["modified"] + stats["dropped"] >= 1
    left = [" ".join(t.split()) for t in pq.read_table(out / "decontaminate" / "docs", columns=["text"]).column("text")
            .to_pylist()]
    assert not any(item in text for item in ITEMS for text in left)


def test_shards_hold_every_deduplicated_document_with_little_padding(pipeline):
    out, _ = pipeline
    index = json.loads((out / "shards" / "index.json").read_text())
    tokenizer_json = (out / "tokenizer" / "tokenizer.json").read_bytes()
    assert index["tokenizer_sha256"] == hashlib.sha256(tokenizer_json).hexdigest()
    texts = pq.read_table(out / "decontaminate" / "docs", columns=["text"]).column("text").to_pylist()
    tokenizer = Tokenizer.from_str(tokenizer_json.decode())
    expected = sum(len(e.ids) + 2 for e in tokenizer.encode_batch(texts, add_special_tokens=False))
    totals = index["totals"]
    held = json.loads((out / "shards" / "heldout" / "index.json").read_text())["totals"]
    assert 0 < held["documents"] < 0.03 * len(texts)  # 1% by the hash of the id
    assert totals["documents"] + held["documents"] == len(texts)
    assert totals["real_tokens"] + held["real_tokens"] == expected
    assert totals["padding_waste"] <= 0.005  # well under 1% (DESIGN.md): the bar on the sample
