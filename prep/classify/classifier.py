"""A trained classifier as the jobs use it: its model file read and checked (prep/classify/fasttext_bin.py),
then the probability of each of its labels for any number of documents.

A two-label model tokenmill trained has a second stage (prep/classify/stacking.py): its score is the second
stage's, over the document's statistics and the n-gram model's log-odds. A model tokenmill trained reads
documents in tokenmill's text form (prep/classify/text.py), marked in its
vocabulary by the word TEXT_FORM:MAX_TOKENS (a model marked with another text form, or with a mark that
cannot be read, is refused: it would read text otherwise than it was trained on); a model fastText trained
(supervised, softmax, without character n-grams, as DCLM's) reads them as DCLM gave them to fastText: white
space collapsed to single spaces.
"""

import json

import numpy as np

from prep.classify import fasttext_bin
from prep.classify.fasttext_bin import ModelError, SupervisedModel
from prep.classify.mlp import log_odds
from prep.classify.predict import Scorer
from prep.classify.stats import NAMES, document_stats
from prep.classify.text import TEXT_FORM, model_line

WORD_CHARS, HAN_SHARE = NAMES.index("mean_word_chars"), NAMES.index("han")
FORM_MARK = TEXT_FORM.rpartition("-")[0].encode()  # "⟨tokenmill:text": the marks of every text form


class Classifier:
    def __init__(self, model: SupervisedModel, source: str = "the model"):
        self.labels = model.labels
        marks = [w for w in model.words if w.startswith(FORM_MARK)]
        self.max_tokens = None  # a model fastText trained: DCLM's text
        if marks:
            form, _, tokens = marks[0].decode("utf-8", "replace").rpartition(":")
            if form != TEXT_FORM:
                raise ModelError(f"{source}: a model of the text form {form[:60]!r}, which this tokenmill does not "
                                 f"make (it makes {TEXT_FORM}): train it again")
            if not (tokens.isascii() and tokens.isdigit() and int(tokens) > 0):
                raise ModelError(f"{source}: an unreadable text form mark {marks[0][:60]!r}")
            self.max_tokens = int(tokens)
        self.scorer = Scorer(model, source)
        self.second_stage, self.positive = model.second_stage, model.positive

    @classmethod
    def load(cls, path: str) -> "Classifier":
        """The classifier in `path`; ModelError if it is not one."""
        return cls(fasttext_bin.read(path), path)

    def line(self, text: str) -> str:
        return model_line(text, self.max_tokens) if self.max_tokens else " ".join(text.split())

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """float32 [texts, labels]: each text's probability of each label."""
        return self.probabilities_of([self.line(text) for text in texts],
                                     document_stats(texts) if self.second_stage is not None else None)

    def probabilities_of(self, lines: list[str], stats: np.ndarray | None) -> np.ndarray:
        """probabilities() of documents given as their text forms and statistics (needed with a second stage)."""
        out = self.scorer.probabilities(lines)
        if self.second_stage is not None and len(lines):
            first = out[:, self.positive]
            second = self.second_stage.probability(np.column_stack([stats, log_odds(first)]))
            # a document without a word has statistics of nothing (zeros) the second stage never learned
            # from ('|||||||' scored 1.0 as prose): the n-gram model's probability stands
            out[:, self.positive] = np.where(_without_words(stats), first, second)
            out[:, 1 - self.positive] = 1 - out[:, self.positive]
        return out

    def label_index(self, label: str, source: str = "the model") -> int:
        """Where `label` is among the labels; ModelError naming them if it is not one."""
        if label not in self.labels:
            raise ModelError(f"{source}: no label {label!r} (its labels: {labels_named(self.labels)})")
        return self.labels.index(label)


def label_shown(label: str, most: int = 60) -> str:
    """A label as a line of text shows it, cut to `most` characters: as it is where it is words each followed
    by one space, else in JSON's quotes and escapes (a label from elsewhere may hold a line break, or look like
    another label: " good", "good\\n")."""
    plain = label.isprintable() and label == " ".join(label.split()) and not label.startswith('"')
    shown = label if plain else json.dumps(label)
    return shown if len(shown) <= most else f"{shown[:most - 3]}..."


def labels_named(labels: list[str], most: int = 20) -> str:
    """A model's labels for a message: a model from elsewhere may hold 10,000 labels of a kilobyte each."""
    shown = ", ".join(map(label_shown, labels[:most]))
    return shown if len(labels) <= most else f"{shown}, ... ({len(labels)} labels in all)"


def _without_words(stats: np.ndarray) -> np.ndarray:
    """Which documents' statistics (document_stats) count no word and no Han character."""
    return (stats[:, WORD_CHARS] == 0) & (stats[:, HAN_SHARE] == 0)
