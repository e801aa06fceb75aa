"""make install's warm-up leaves the compiled kernels in their cache: a job's first calls compile nothing."""

import os
import subprocess
import sys

from tests.conftest import REPO

FIRST_CALLS = """
import pyarrow as pa
from prep.dedup.batches import DedupConfig, features_batch
from prep.tokenizer.bpe import train_bpe
from prep.tokenizer.encoder import Encoder
from prep.warm import _as_received
texts = ["A first document, of a few words.", "第二个文档。", "and a third one"] * 20
column = _as_received(pa.array(texts))
features_batch(pa.record_batch({"row": pa.array(range(60), pa.int64()), "id": pa.array([str(i) for i in range(60)]),
                                "text": column}), DedupConfig())
Encoder(train_bpe(texts, 300).to_str()).encode_batch(column)
"""


def cache_files(folder):
    return sorted(str(p) for p in folder.rglob("*") if p.is_file())


def test_after_the_warm_up_a_fresh_process_compiles_nothing(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    subprocess.run([sys.executable, "-m", "prep.warm"], cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
    warmed = cache_files(tmp_path / "numba")
    assert any("minhash" in f for f in warmed) and any("encoder" in f for f in warmed)
    subprocess.run([sys.executable, "-c", FIRST_CALLS], cwd=REPO, env=env, check=True, capture_output=True,
                   timeout=600)
    assert cache_files(tmp_path / "numba") == warmed  # every kernel those calls ran was loaded, none compiled
