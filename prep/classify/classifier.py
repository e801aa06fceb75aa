"""A trained classifier as the jobs use it: its model file read and checked (prep/classify/fasttext_bin.py),
then the probability of each of its labels for any number of documents.

A model tokenmill trained reads documents in tokenmill's text form (prep/classify/text.py), marked in its
vocabulary by the word TEXT_FORM:MAX_TOKENS; a model fastText trained (supervised, softmax, without
character n-grams, as DCLM's) reads them as DCLM gave them to fastText: white space collapsed to single
spaces.
"""

import numpy as np

from prep.classify import fasttext_bin
from prep.classify.fasttext_bin import ModelError, SupervisedModel
from prep.classify.predict import Scorer
from prep.classify.text import TEXT_FORM, model_line


class Classifier:
    def __init__(self, model: SupervisedModel, source: str = "the model"):
        self.labels = model.labels
        marks = [w for w in model.words if w.startswith(TEXT_FORM.encode())]
        self.max_tokens = None  # a model fastText trained: DCLM's text
        if marks:
            try:
                self.max_tokens = int(marks[0].decode().rpartition(":")[2])
            except ValueError:
                raise ModelError(f"{source}: an unreadable text form mark {marks[0][:60]!r}") from None
        self.scorer = Scorer(model)

    @classmethod
    def load(cls, path: str) -> "Classifier":
        """The classifier in `path`; ModelError if it is not one."""
        return cls(fasttext_bin.read(path), path)

    def line(self, text: str) -> str:
        return model_line(text, self.max_tokens) if self.max_tokens else " ".join(text.split())

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """float32 [texts, labels]: each text's probability of each label."""
        return self.scorer.probabilities([self.line(text) for text in texts])

    def label_index(self, label: str, source: str = "the model") -> int:
        """Where `label` is among the labels; ModelError naming them if it is not one."""
        if label not in self.labels:
            raise ModelError(f"{source}: no label {label!r} (its labels: {', '.join(self.labels)})")
        return self.labels.index(label)
