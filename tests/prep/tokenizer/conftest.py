import random

import pytest

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.superwords import SuperwordConfig
from prep.tokenizer.train import TokenizerConfig, train_local

# The tokenizers the tests train on the sample, by name: 4,096 pieces each.
SAMPLE_CONFIGS = {"hybrid": TokenizerConfig(vocab_size=4096, algorithm="hybrid"),
                  "bpe": TokenizerConfig(vocab_size=4096, algorithm="bpe"),
                  "superwords": TokenizerConfig(vocab_size=4096, superword=SuperwordConfig(superwords=True))}


@pytest.fixture(scope="session")
def split_sample(sample_dir) -> tuple[list[str], list[str]]:
    """The sample's documents shuffled with a fixed seed: 300 held out, the rest to train on."""
    texts = [r.text for f in expand_inputs(str(sample_dir)) for r in read_file(f) if isinstance(r, Document)]
    random.Random(0).shuffle(texts)
    return texts[:300], texts[300:]


@pytest.fixture(scope="session")
def trained_on_sample(split_sample):
    """(tokenizer, details) of SAMPLE_CONFIGS[name] trained on the sample's training part, each once in the
    run (the tokenizer tests share them: about 15 s each)."""
    trained: dict[str, tuple] = {}

    def train(name: str) -> tuple:
        if name not in trained:
            trained[name] = train_local(split_sample[1], SAMPLE_CONFIGS[name])
        return trained[name]

    return train
