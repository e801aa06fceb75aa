"""The second stage of a two-label classifier: the documents' statistics (prep/classify/stats.py) tell what
n-grams cannot (prose from the same sentences shuffled with another document's, a listing, a text that
repeats itself); the network over them and the n-gram model's log-odds (prep/classify/mlp.py) is trained the
same way twice; the model file carries it after fastText's model, fastText still reads the file (and gives
the n-gram model's scores), and a crafted second stage is a ModelError."""

import dataclasses
import json
import os
import random
import struct
import subprocess
import sys

import numpy as np
import pytest

from prep.classify import fasttext_bin, mlp
from prep.classify.classifier import Classifier
from prep.classify.fasttext_bin import SECOND_STAGE, ModelError
from prep.classify.metrics import roc_auc
from prep.classify.stacking import train_classifier, words_learned_little
from prep.classify.stats import NAMES, document_stats
from tests.conftest import REPO
from tests.prep.classify.conftest import SETTINGS

SENTENCES = {"en": ". ", "zh": "。"}


def test_the_statistics_of_real_documents(labelled):
    prose = [d.text for d in labelled if d.label == "prose"]
    stats = document_stats(prose + [""])
    assert stats.shape == (len(prose) + 1, len(NAMES)) and np.isfinite(stats).all()
    repeated = NAMES.index("repeated_sentences")
    copied = prose[0].split("\n\n")[0]
    twice = document_stats([copied + "\n\n" + copied])[0]
    assert twice[repeated] > 0.4 and document_stats([copied])[0][repeated] == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_prose_holds_together_and_prose_shuffled_with_anothers_does_not(labelled, lang):
    """A real paragraph's sentences share content words with the ones before them; the same sentences
    shuffled with another document's share fewer."""
    articles = [d for d in labelled if d.label == "prose" and d.lang == lang]
    rng, real, mixed = random.Random(0), [], []
    sharing = NAMES.index("sentences_sharing_with_the_last")
    for a, b in zip(articles, articles[1:] + articles[:1]):
        ours, theirs = ([s for s in d.text.split("\n\n")[0].split(SENTENCES[lang]) if s.strip()] for d in (a, b))
        if a.origin == b.origin or len(ours) < 3 or len(theirs) < 2:
            continue
        shuffled = ours + theirs
        rng.shuffle(shuffled)
        found = document_stats([SENTENCES[lang].join(ours), SENTENCES[lang].join(shuffled)])[:, sharing]
        real.append(found[0])
        mixed.append(found[1])
    assert len(real) >= 30
    assert np.mean(real) > np.mean(mixed) + 0.1 and roc_auc(np.array(real), np.array(mixed)) > 0.65


def test_what_a_sentences_place_says_is_lost_when_a_documents_own_sentences_are_shuffled(labelled):
    """Shuffled, a document's sentences leave parentheses and quotations open in one paragraph and closed in
    another, follow an abbreviation's full stop with a capital and a sentence's with a lowercase word, and
    open a paragraph with a word referring back as often as they follow a sentence of it."""
    from tests.labelled.classifier_set import hard, paragraphs

    articles = [d for d in labelled if d.label == "prose" and len(paragraphs(d.text)) > 2]
    rng = random.Random(0)
    shuffled = [hard("shuffled_within", d, articles, rng) for d in articles]
    assert len(articles) > 200 and sum(a.text != b for a, b in zip(articles, shuffled)) > 200
    found = document_stats([d.text for d in articles] + shuffled)
    real, mixed = found[:len(articles)], found[len(articles):]
    for name, real_higher in (("unbalanced_paragraphs", False), ("lowercase_after_a_sentence", False),
                              ("referring_back_inside_not_first", True)):
        column = NAMES.index(name)
        assert (real[:, column].mean() > mixed[:, column].mean()) == real_higher, name
    both = np.column_stack([found[:, NAMES.index(n)] for n in ("unbalanced_paragraphs", "lowercase_after_a_sentence")])
    assert (both[len(articles):].sum(axis=1) > 0).sum() > 1.5 * (both[:len(articles)].sum(axis=1) > 0).sum()
    spans = 'He read it (the first page. Then the last.) and said: "Keep it. Both."\n\nThe end. The rest.'
    assert document_stats([spans])[0, NAMES.index("unbalanced_paragraphs")] == 0
    halves = "He read it (the first page. The end. The rest.\n\nThen the last.) and said it."
    assert document_stats([halves])[0, NAMES.index("unbalanced_paragraphs")] == 1


def test_the_network_learns_the_same_weights_twice_and_separates_what_it_can():
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(400, len(NAMES) + 1))
    positive = inputs[:, 0] * inputs[:, 1] > 0  # not linear: what the second stage is for
    first, second = mlp.fit(inputs, positive), mlp.fit(inputs, positive)
    assert all(np.array_equal(getattr(first, f), getattr(second, f)) for f in ("hidden_weights", "output_weights"))
    assert roc_auc(first.probability(inputs)[positive], first.probability(inputs)[~positive]) > 0.95


def test_few_examples_that_the_halves_learn_little_from_still_give_calibrated_scores(prose_junk):
    """Found by trying (the pipeline's DCLM recipe on 277 documents scored every document 0.0005): where the
    n-gram models of half the examples learn next to nothing and the model of all of them learns something,
    the second stage had standardized their log-odds by a spread of hundredths, and the whole model's
    log-odds became inputs of 150 standard deviations. 210 prose documents against 65 junk, three epochs:
    before the fix the held-out junk scored 0.49 on average."""
    labels = prose_junk.train_labels
    taken = sorted([i for i, label in enumerate(labels) if label == "prose"][:210] +
                   [i for i, label in enumerate(labels) if label == "junk"][:65])
    model, _ = train_classifier([prose_junk.train_lines[i] for i in taken],
                                document_stats([prose_junk.train_texts[i] for i in taken]),
                                [labels[i] for i in taken], np.arange(len(taken)) % 2,
                                dataclasses.replace(SETTINGS, epoch=3, dim=64))
    scores = Classifier(model).probabilities_of(prose_junk.held_lines, document_stats(prose_junk.held_texts))
    prose = scores[:, model.labels.index("prose")]
    good = np.array([label == "prose" for label in prose_junk.held_labels])
    assert prose[~good].mean() < 0.05 and prose[good].mean() > 0.95
    assert roc_auc(prose[good], prose[~good]) > 0.995
    assert words_learned_little(model)  # which the train job's report says


@pytest.fixture(scope="module")
def stacked(prose_junk):
    folds = np.arange(len(prose_junk.train_lines)) % 2
    return train_classifier(prose_junk.train_lines, document_stats(prose_junk.train_texts),
                            prose_junk.train_labels, folds, SETTINGS)[0]


def test_both_stages_are_written_read_and_give_the_same_scores(stacked, prose_junk, tmp_path):
    assert stacked.second_stage is not None and not words_learned_little(stacked)
    path = tmp_path / "model.bin"
    fasttext_bin.write(stacked, str(path))
    again = Classifier.load(str(path))
    scores = again.probabilities(prose_junk.held_texts)
    assert np.array_equal(scores, Classifier(stacked).probabilities(prose_junk.held_texts))
    prose = again.label_index("prose")
    truth = np.array([label == "prose" for label in prose_junk.held_labels])
    assert roc_auc(scores[truth, prose], scores[~truth, prose]) > 0.97
    fasttext_bin.write(fasttext_bin.read(str(path)), str(tmp_path / "again.bin"))
    assert (tmp_path / "again.bin").read_bytes() == path.read_bytes()


def test_a_document_without_a_word_has_the_ngram_models_score(stacked):
    """Found by trying: '', '....' and '|||||||' scored about 1.0 as prose, the second stage reading statistics
    of nothing (no word, no sentence: all zeros) it never learned from; the n-gram model gave '|||||||' 0.000."""
    classifier = Classifier(stacked)
    wordless = ["", "....", "|||||||", "-----\n-----\n-----", "  \n\n  ", "→ ★ ★ ★ ←"]
    scores = classifier.probabilities(wordless)
    first = classifier.scorer.probabilities([classifier.line(text) for text in wordless])
    prose = classifier.label_index("prose")
    assert np.array_equal(scores[:, prose], first[:, prose]) and np.allclose(scores, first, atol=1e-6)
    assert scores[2, prose] < 0.5
    worded = ["word", "一个字"]  # one word is still read by both stages
    assert not np.allclose(classifier.probabilities(worded),
                           classifier.scorer.probabilities([classifier.line(text) for text in worded]), atol=1e-3)


def test_strange_text_gets_finite_statistics_and_a_probability(stacked):
    from tests.fuzz_text import fuzz_strings, hostile_strings

    texts = [*fuzz_strings(), *hostile_strings(300), "(" * 30_000, "）" * 30_000 + "。", '"' * 50_001,
             "e.g. the end. " * 5_000, "This. " * 10_000, "\n\n".join(["(a. b."] * 3_000)]
    stats = document_stats(texts)
    assert stats.shape == (len(texts), len(NAMES)) and np.isfinite(stats).all()
    scores = Classifier(stacked).probabilities(texts)
    assert np.isfinite(scores).all() and ((scores >= 0) & (scores <= 1)).all()


def test_fasttext_reads_the_file_and_gives_the_ngram_models_scores(stacked, prose_junk, tmp_path):
    import fasttext  # fasttext-predict: fastText's own predict

    fasttext_bin.write(stacked, str(tmp_path / "whole.bin"), whole=True)
    ours = Classifier(stacked).scorer.probabilities(prose_junk.held_lines[:50])
    theirs = fasttext.load_model(str(tmp_path / "whole.bin"))
    for line, row in zip(prose_junk.held_lines[:50], ours):
        labels, probabilities = theirs.predict(line, k=-1)
        found = dict(zip(labels, probabilities))
        assert all(abs(found[f"__label__{label}"] - 1e-5 - row[i]) < 1e-5 for i, label in enumerate(stacked.labels))


def trained_and_written(examples: str, path: str) -> None:
    texts, lines, labels = json.load(open(examples))
    model = train_classifier(lines, document_stats(texts), labels, np.arange(len(lines)) % 2, SETTINGS)[0]
    fasttext_bin.write(model, path)


def test_the_same_examples_give_the_same_model_bytes_in_another_process(stacked, prose_junk, tmp_path):
    """Trained again here, and in another process with another string hash seed (the order in which a set
    iterates): the same bytes."""
    examples = tmp_path / "examples.json"
    examples.write_text(json.dumps([prose_junk.train_texts, prose_junk.train_lines, prose_junk.train_labels]))
    fasttext_bin.write(stacked, str(tmp_path / "a.bin"))
    trained_and_written(str(examples), str(tmp_path / "b.bin"))
    code = "import sys; from tests.prep.classify.test_stacking import trained_and_written as t; t(*sys.argv[1:])"
    subprocess.run([sys.executable, "-c", code, str(examples), str(tmp_path / "c.bin")], cwd=REPO, check=True,
                   env={**os.environ, "PYTHONHASHSEED": "12345"}, timeout=600)
    first = (tmp_path / "a.bin").read_bytes()
    assert (tmp_path / "b.bin").read_bytes() == first and (tmp_path / "c.bin").read_bytes() == first


def test_a_crafted_second_stage_is_a_model_error(stacked, tmp_path):
    path = tmp_path / "model.bin"
    fasttext_bin.write(stacked, str(path))
    data = path.read_bytes()
    at = data.index(SECOND_STAGE) + len(SECOND_STAGE)
    version, inputs, hidden, positive = struct.unpack_from("<4i", data, at)
    weights_at = at + 16
    cases = {
        "cut": data[:-3],
        "cut in its header": data[:at + 6],
        "inputs of another version": data[:at] + struct.pack("<4i", version, inputs + 1, hidden, positive)
        + data[weights_at:],
        "an earlier tokenmill's statistics, version 1": data[:at] + struct.pack("<4i", 1, inputs - 4, hidden, positive)
        + data[weights_at:],
        "an earlier tokenmill's statistics, version 2": data[:at] + struct.pack("<4i", 2, inputs - 1, hidden, positive)
        + data[weights_at:],
        "2^31 hidden units": data[:at] + struct.pack("<4i", version, inputs, 2**31 - 1, positive) + data[weights_at:],
        "a label past the two": data[:at] + struct.pack("<4i", version, inputs, hidden, 2) + data[weights_at:],
        "a weight not a number": data[:weights_at] + struct.pack("<f", float("nan")) + data[weights_at + 4:],
        "a scale of zero": data[:weights_at + 4 * inputs] + struct.pack("<f", 0.0) + data[weights_at + 4 * inputs + 4:],
        "bytes after it": data + b"\0",
    }
    for what, crafted in cases.items():
        (tmp_path / "crafted.bin").write_bytes(crafted)
        with pytest.raises(ModelError, match="crafted.bin") as raised:
            fasttext_bin.read(str(tmp_path / "crafted.bin"))
        assert ("train the classifier again" in str(raised.value)) == what.startswith("an earlier tokenmill's")
