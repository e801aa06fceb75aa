import random

import pytest

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file


@pytest.fixture(scope="session")
def split_sample(sample_dir) -> tuple[list[str], list[str]]:
    """The sample's documents shuffled with a fixed seed: 300 held out, the rest to train on."""
    texts = [r.text for f in expand_inputs(str(sample_dir)) for r in read_file(f) if isinstance(r, Document)]
    random.Random(0).shuffle(texts)
    return texts[:300], texts[300:]
