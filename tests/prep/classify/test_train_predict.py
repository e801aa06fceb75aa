"""prep/classify/train.py and predict.py on real documents: a model of a few hundred documents of the labelled
set (prose against six kinds of junk, English and Chinese) trained in a fraction of a second tells held-out
prose from junk; the same input and settings give the same model bytes; and fastText's own predict
(fasttext-predict, its C++ code) gives the probabilities tokenmill's scorer gives, on the model written whole."""

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import fasttext
import numpy as np
import pytest

from prep.classify import fasttext_bin, predict
from prep.classify.metrics import roc_auc
from prep.classify.predict import Scorer
from prep.classify.text import model_line
from prep.classify.train import TrainConfig, train
from tests.prep.classify.conftest import MAX_TOKENS, SETTINGS

REPO = Path(__file__).resolve().parents[3]
TINY = ["7", ".", "-", "", "中", "x y", "Debian"]  # documents of a token or none


def test_a_model_of_a_few_hundred_documents_tells_prose_from_junk(prose_model, prose_junk):
    assert 600 < len(prose_junk.train_lines) < 1000 and len(prose_junk.held_lines) > 200
    probabilities = Scorer(prose_model).probabilities(prose_junk.held_lines)
    predicted = [prose_model.labels[i] for i in probabilities.argmax(axis=1)]
    accuracy = np.mean([p == t for p, t in zip(predicted, prose_junk.held_labels)])
    prose = probabilities[:, prose_model.labels.index("prose")]
    truth = np.array(prose_junk.held_labels) == "prose"
    assert 0.4 < truth.mean() < 0.6  # chance is about a half
    assert accuracy > 0.9, accuracy
    assert roc_auc(prose[truth], prose[~truth]) > 0.97


def test_same_input_and_settings_same_model_bytes(prose_junk, tmp_path):
    """Trained twice here, and once more in another process with another string hash seed: the same bytes.
    Another seed: other bytes."""
    lines, labels = prose_junk.train_lines, prose_junk.train_labels
    for name, cfg in (("a", SETTINGS), ("b", SETTINGS), ("seed", dataclasses.replace(SETTINGS, init_seed=1))):
        fasttext_bin.write(train(lines, labels, cfg)[0], str(tmp_path / f"{name}.bin"))
    (tmp_path / "examples.json").write_text(json.dumps([lines, labels]))
    code = ("import json, sys; from prep.classify import fasttext_bin; from prep.classify.train import train; "
            "from tests.prep.classify.conftest import SETTINGS; lines, labels = json.load(open(sys.argv[1])); "
            "fasttext_bin.write(train(lines, labels, SETTINGS)[0], sys.argv[2])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "examples.json"), str(tmp_path / "c.bin")],
                          cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "12345"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    first = (tmp_path / "a.bin").read_bytes()
    assert (tmp_path / "b.bin").read_bytes() == first
    assert (tmp_path / "c.bin").read_bytes() == first
    assert (tmp_path / "seed.bin").read_bytes() != first


def fasttexts_probabilities(path: Path, labels: list[str], lines: list[str]) -> np.ndarray:
    """fastText's predict(line, k=-1) of every line, as [lines, labels], less the 1e-5 it adds (its
    probabilities are exp(log(p + 1e-5)))."""
    model = fasttext.load_model(str(path))
    out = np.zeros((len(lines), len(labels)))
    for t, line in enumerate(lines):
        found, probabilities = model.predict(line, k=-1)
        assert sorted(found) == sorted(f"__label__{label}" for label in labels)
        for label, p in zip(found, probabilities):
            out[t, labels.index(label[len("__label__"):])] = p - 1e-5
    return out


@pytest.mark.parametrize("which", ["prose_junk", "three_kinds"])
def test_fasttexts_own_predict_gives_the_same_probabilities(which, request, tmp_path):
    split = request.getfixturevalue(which)
    model = request.getfixturevalue({"prose_junk": "prose_model", "three_kinds": "three_kind_model"}[which])
    fasttext_bin.write(model, str(tmp_path / "whole.bin"), whole=True)
    lines = split.held_lines + [model_line(text, MAX_TOKENS) for text in TINY]
    ours = Scorer(model).probabilities(lines)
    theirs = fasttexts_probabilities(tmp_path / "whole.bin", model.labels, lines)
    assert np.abs(ours - theirs).max() < 2e-6
    assert (ours.argmax(axis=1) == theirs.argmax(axis=1)).all()


def test_a_model_of_words_alone_as_fasttext_writes_it(prose_junk, tmp_path):
    """fastText trains -wordNgrams 1 (its default) with -bucket 0 and writes no bucket rows: such a model is
    read (it was refused: "buckets 0: out of bounds") and scores as fastText's predict does."""
    model = train(prose_junk.train_lines, prose_junk.train_labels, dataclasses.replace(SETTINGS, word_ngrams=1))[0]
    assert not len(model.kept_buckets)
    fasttext_bin.write(dataclasses.replace(model, bucket=0), str(tmp_path / "words.bin"), whole=True)
    back = fasttext_bin.read(str(tmp_path / "words.bin"))
    assert back.bucket == 0 and back.input.shape == (len(model.words), model.dim)
    lines = prose_junk.held_lines + [model_line(text, MAX_TOKENS) for text in TINY]
    ours = Scorer(back).probabilities(lines)
    assert np.array_equal(ours, Scorer(model).probabilities(lines))
    assert np.abs(ours - fasttexts_probabilities(tmp_path / "words.bin", model.labels, lines)).max() < 2e-6


def test_a_documents_scores_do_not_depend_on_its_batch(prose_model, prose_junk):
    lines = prose_junk.held_lines[:40] + [model_line(text, MAX_TOKENS) for text in TINY * 5]
    scorer = Scorer(prose_model)
    together = scorer.probabilities(lines)
    alone = np.concatenate([scorer.probabilities([line]) for line in lines])
    assert np.array_equal(together, alone)
    assert np.allclose(together.sum(axis=1), 1, atol=1e-5)  # every line has "</s>" at least: a distribution
    assert scorer.probabilities([]).shape == (0, 2)
    # a batch of documents of one character or none ("7" is the line "0"): lines of a byte, no separator
    tiny = [model_line(text, MAX_TOKENS) for text in ["7", ".", "-", ""] * 50]
    assert np.array_equal(scorer.probabilities(tiny), np.concatenate([scorer.probabilities([t]) for t in tiny]))


def test_buckets_searched_or_tabled_score_the_same(prose_model, prose_junk, monkeypatch):
    """Past DENSE_LOGITS the scorer searches the kept buckets instead of a table of them all."""
    tabled = Scorer(prose_model)
    monkeypatch.setattr(predict, "DENSE_LOGITS", 0)
    searched = Scorer(prose_model)
    assert len(tabled.bucket_logits) == prose_model.bucket and not len(searched.bucket_logits)
    lines = prose_junk.held_lines + [model_line(text, MAX_TOKENS) for text in TINY]
    assert np.array_equal(tabled.probabilities(lines), searched.probabilities(lines))


def test_a_model_trained_on_any_text_can_be_read_back(prose_junk, tmp_path):
    """A word longer than a model file's word may be (checksums run together, a paragraph of one long
    "word") is left out of the vocabulary: it was written, and the model could not be read back."""
    checksums = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(40))  # 2,560 characters
    texts = [f"Checksums: {checksums}. {prose_junk.train_texts[0]}", "A" * 3000 + "\n\n" + prose_junk.train_texts[1]]
    lines = prose_junk.train_lines[:200] + [model_line(text, MAX_TOKENS) for text in texts]
    assert max(len(token.encode()) for line in lines for token in line.split()) > fasttext_bin.MAX_WORD_BYTES
    model = train(lines, prose_junk.train_labels[:200] + ["junk", "prose"], SETTINGS)[0]
    fasttext_bin.write(model, str(tmp_path / "model.bin"))
    back = fasttext_bin.read(str(tmp_path / "model.bin"))
    assert np.array_equal(Scorer(back).probabilities(lines), Scorer(model).probabilities(lines))


@pytest.mark.parametrize("label, message", [("bad\0label", "label"), ("x" * 2000, "label")])
def test_a_label_a_model_file_cannot_hold_is_refused(prose_junk, label, message):
    labels = [label if x == "junk" else x for x in prose_junk.train_labels[:100]]
    with pytest.raises(ValueError, match=message):
        train(prose_junk.train_lines[:100], labels, SETTINGS)


def test_examples_and_labels_must_pair(prose_junk):
    with pytest.raises(ValueError, match="labels"):
        train(prose_junk.train_lines[:100], prose_junk.train_labels[:99], SETTINGS)
    with pytest.raises(ValueError, match="two labels"):
        train(prose_junk.train_lines[:10], ["prose"] * 10, SETTINGS)


@pytest.mark.parametrize("change", [{"dim": 0}, {"dim": 1025}, {"epoch": 0}, {"lr": 0}, {"word_ngrams": 6},
                                    {"bucket": 0}, {"bucket": 2**31}, {"min_count": 0}, {"max_tokens": 0}])
def test_settings_out_of_bounds_are_refused(change):
    with pytest.raises(ValueError):
        TrainConfig(**change)


def test_min_count_leaves_rare_words_out(prose_junk):
    lines, labels = prose_junk.train_lines[:300], prose_junk.train_labels[:300]
    every = train(lines, labels, SETTINGS)[0]
    common = train(lines, labels, dataclasses.replace(SETTINGS, min_count=3))[0]
    assert (every.word_counts[:-1] >= 1).all() and (common.word_counts[:-1] >= 3).all()  # the last: the form's mark
    assert set(common.words) < set(every.words)
    assert len(common.words) < 0.6 * len(every.words), (len(common.words), len(every.words))
