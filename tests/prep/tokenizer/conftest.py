import random

import pytest

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.train import TokenizerConfig, train_local


@pytest.fixture(scope="session")
def split_sample(sample_dir) -> tuple[list[str], list[str]]:
    """The sample's documents shuffled with a fixed seed: 300 held out, the rest to train on."""
    texts = [r.text for f in expand_inputs(str(sample_dir)) for r in read_file(f) if isinstance(r, Document)]
    random.Random(0).shuffle(texts)
    return texts[:300], texts[300:]


@pytest.fixture(scope="session")
def trained_on_sample(split_sample):
    """(tokenizer, details) trained on the sample's training part, each configuration once in the run (the
    tokenizer tests share them: about 15 s each)."""
    trained: dict[TokenizerConfig, tuple] = {}

    def train(cfg: TokenizerConfig) -> tuple:
        if cfg not in trained:
            trained[cfg] = train_local(split_sample[1], cfg)
        return trained[cfg]

    return train
