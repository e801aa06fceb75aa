"""`python -m jobs.pipeline` on the embedded sample, as `make shards` runs it: every stage's output,
valid shards, the padding budget, and every deduplicated document's tokens in the shards."""

import hashlib
import json

import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from schemas.validate import validate
from tests.spark_stages.conftest import run_module

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def pipeline(sample_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("pipeline")
    done = run_module("pipeline", "--input", str(sample_dir), "--output", str(out), "--vocab-size", "4096")
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout


def test_every_stage_writes_its_output(pipeline):
    out, stdout = pipeline
    for marker in ("clean/stats.json", "dedup/stats.json", "tokenizer/report.json", "tokenizer/tokenizer.json",
                   "shards/index.json"):
        assert (out / marker).is_file(), marker
    assert "padding waste" in stdout and validate(out / "shards") == []


def test_shards_hold_every_deduplicated_document_with_little_padding(pipeline):
    out, _ = pipeline
    index = json.loads((out / "shards" / "index.json").read_text())
    tokenizer_json = (out / "tokenizer" / "tokenizer.json").read_bytes()
    assert index["tokenizer_sha256"] == hashlib.sha256(tokenizer_json).hexdigest()
    texts = pq.read_table(out / "dedup" / "docs", columns=["text"]).column("text").to_pylist()
    tokenizer = Tokenizer.from_str(tokenizer_json.decode())
    expected = sum(len(e.ids) + 2 for e in tokenizer.encode_batch(texts, add_special_tokens=False))
    totals = index["totals"]
    assert totals["documents"] == len(texts) and totals["real_tokens"] == expected
    assert totals["padding_waste"] <= 0.005  # well under 1% (DESIGN.md): the bar on the sample
