"""How much better a document's order of sentences is than shuffles of them (prep/classify/order.py): on the
sample's prose, English and Chinese, a document scores well above its own sentences shuffled, and a shuffled
one scores about 0 (it is one of the shuffles); the same document scores the same every time, in this
process and in others; too few sentences score 0; a document of thousands of sentences is read to its first 64."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from prep.classify.metrics import roc_auc
from prep.classify.order import MAX_SENTENCES, MAX_Z, order_against_shuffles
from prep.classify.stats import NAMES, document_stats
from prep.classify.text import PARAGRAPH, SENTENCE_END, content_words
from tests.conftest import REPO
from tests.labelled.classifier_set import hard, paragraphs

COLUMN = NAMES.index("order_against_shuffles")


@pytest.fixture(scope="module")
def real_and_shuffled(labelled):
    articles = [d for d in labelled if d.label == "prose" and len(paragraphs(d.text)) > 2]
    rng = random.Random(0)
    shuffled = [hard("shuffled_within", d, articles, rng) for d in articles]
    found = document_stats([d.text for d in articles] + shuffled)[:, COLUMN]
    return articles, found[:len(articles)], found[len(articles):]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_documents_own_order_beats_its_sentences_shuffled(real_and_shuffled, lang):
    articles, real, shuffled = real_and_shuffled
    ours = np.array([d.lang == lang for d in articles])
    assert ours.sum() > 100
    assert roc_auc(real[ours], shuffled[ours]) > 0.75
    assert real[ours].mean() > 3 and abs(shuffled[ours].mean()) < 1  # a shuffle is one of the shuffles: about 0


def test_the_same_document_scores_the_same_every_time_and_too_few_sentences_score_0(real_and_shuffled):
    articles, real, _ = real_and_shuffled
    again = document_stats([articles[1].text, articles[0].text])[:, COLUMN]
    assert again.tolist() == [real[1], real[0]]
    assert order_against_shuffles([["one sentence.", "two sentences."], ["three."]], [{"sentence"}] * 3) == 0
    text = [["a first sentence.", "the first again."], ["a second one.", "the second again."], ["a third."]]
    words = [{"first"}, {"first"}, {"second"}, {"second"}, {"third"}]
    assert order_against_shuffles([[], *text[:2], [], text[2]], words) == order_against_shuffles(text, words) > 0
    alike = [["the same words here."] * 5] * 3  # nothing changes under a shuffle: a number, not infinity
    value = order_against_shuffles(alike, [{"words"}] * 15)
    assert np.isfinite(value) and abs(value) <= 8 * MAX_Z  # eight cues


def test_a_document_of_thousands_of_sentences_is_read_to_its_first_64(real_and_shuffled):
    """Bounded work whatever the document: a paragraph of 5,000 sentences scores as its first MAX_SENTENCES."""
    articles, _, _ = real_and_shuffled
    sentences = [s for d in articles for s in SENTENCE_END.split(d.text.lower()) if s.strip()][:5000]
    assert len(sentences) == 5000
    contents = [content_words(s) for s in sentences]
    whole = order_against_shuffles([sentences], contents)
    assert whole == order_against_shuffles([sentences[:MAX_SENTENCES]], contents[:MAX_SENTENCES]) and whole != 0


def exact(texts: list[str]) -> list[str]:
    """Each text's statistic, its float64 bits in hex."""
    found = []
    for text in texts:
        split = [[s for s in SENTENCE_END.split(p) if s.strip()] for p in PARAGRAPH.split(text.lower()) if p.strip()]
        found.append(order_against_shuffles(split, [content_words(s) for p in split for s in p]).hex())
    return found


def test_processes_with_other_string_hash_seeds_give_the_same_bits(real_and_shuffled, tmp_path):
    """A set of words iterates in an order that the process's string hash seed decides; the statistic, and so a
    model's bytes and a corpus's scores, must not depend on it."""
    articles, _, _ = real_and_shuffled
    texts = [d.text for d in articles[:200]]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    code = ("import json, sys; from tests.prep.classify.test_order import exact; "
            "print(json.dumps(exact(json.load(open(sys.argv[1])))))")
    found = [json.loads(subprocess.run([sys.executable, "-c", code, str(tmp_path / "texts.json")], cwd=REPO,
                                       env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True,
                                       check=True, timeout=300).stdout) for seed in ("1", "2")]
    assert found[0] == found[1] == exact(texts)
