"""Training is a function of the text and the settings: byte-identical tokenizer files from two fresh
processes (Python's hash seed and the Rust side's hash sets change order between processes)."""

import os
import subprocess
import sys

from tests.conftest import REPO

TRAIN_AND_SAVE = """
import sys
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.train import TokenizerConfig, train_local
texts = [r.text for f in expand_inputs(sys.argv[1]) for r in read_file(f) if isinstance(r, Document)][:300]
for algorithm in ("hybrid", "bpe"):
    tokenizer, _ = train_local(texts, TokenizerConfig(vocab_size=1024, algorithm=algorithm))
    tokenizer.save(f"{sys.argv[2]}/{algorithm}.json")
"""


def test_two_fresh_processes_train_byte_identical_tokenizers(sample_dir, tmp_path):
    for seed in ("1", "2"):
        (tmp_path / seed).mkdir()
        subprocess.run([sys.executable, "-c", TRAIN_AND_SAVE, str(sample_dir / "debian-faq*"), str(tmp_path / seed)],
                       cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed}, check=True, timeout=300)
    for algorithm in ("hybrid", "bpe"):
        first, second = ((tmp_path / seed / f"{algorithm}.json").read_bytes() for seed in ("1", "2"))
        assert first == second, f"{algorithm}: two runs on the same text wrote different tokenizers"
