"""Real labelled documents for the classifier tests: the prose and the junk of tests/labelled/quality_set.py
(built once, from the embedded sample, English and Chinese), in the classifier's text form, split by a fixed
seed; and models trained on them, small enough to train in a fraction of a second."""

import random
from dataclasses import dataclass

import pytest

from prep.classify.text import model_line
from prep.classify.train import TrainConfig, train
from tests.labelled import quality_set

MAX_TOKENS = 256  # tokens of text read per document: the models' text form
SETTINGS = TrainConfig(dim=16, bucket=2**16, max_tokens=MAX_TOKENS)  # 2^16 buckets: a whole file of ~4 MB


@dataclass
class Split:
    train_texts: list[str]
    train_lines: list[str]
    train_labels: list[str]
    held_texts: list[str]
    held_lines: list[str]
    held_labels: list[str]


def split(docs: list, label_of, heldout: float = 0.25) -> Split:
    """The documents shuffled by a fixed seed, in text form, the last `heldout` of them held out."""
    docs = list(docs)
    random.Random(0).shuffle(docs)
    lines = [model_line(d.text, MAX_TOKENS) for d in docs]
    cut = round(len(docs) * (1 - heldout))
    texts, labels = [d.text for d in docs], [label_of(d) for d in docs]
    return Split(texts[:cut], lines[:cut], labels[:cut], texts[cut:], lines[cut:], labels[cut:])


@pytest.fixture(scope="session")
def labelled() -> list[quality_set.Labelled]:
    return quality_set.build()


@pytest.fixture(scope="session")
def prose_junk(labelled) -> Split:
    """About 980 documents: prose, and six kinds of junk labelled junk."""
    return split(labelled, lambda d: "prose" if d.label == "prose" else "junk")


@pytest.fixture(scope="session")
def three_kinds(labelled) -> Split:
    """Prose, navigation menus and number tables, each its own label."""
    kinds = ("prose", "navigation_menu", "number_table")
    return split([d for d in labelled if d.label in kinds], lambda d: d.label)


@pytest.fixture(scope="session")
def prose_model(prose_junk):
    return train(prose_junk.train_lines, prose_junk.train_labels, SETTINGS)[0]


@pytest.fixture(scope="session")
def three_kind_model(three_kinds):
    return train(three_kinds.train_lines, three_kinds.train_labels, SETTINGS)[0]
