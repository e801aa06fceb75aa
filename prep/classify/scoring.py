"""The classifiers a job scores documents with (`clean.classifiers`), and the rules that act on a score.

`classifiers: {NAME: {model: PATH, label: LABEL}}` adds `score_NAME`, the probability of LABEL, to every
document, kept and rejected alike (a report can then show the good documents a rule threw away); a model of
more than two labels also adds `label_NAME`, its most probable label, and `label_score_NAME`, that label's
probability. An entry `{combine: mean, of: [A, B]}`
is an ensemble, the mean (or max) of its members' scores, as Nemotron-CC's. The rules on a score, for the
documents the other rules kept: `min_score` rejects those under it, `keep_labels` those whose best label is
not one of them (the reason `classifier:NAME`); `keep_top` keeps that share of them, the best, and `buckets`
numbers their score quantiles in `bucket_NAME`: both over the whole corpus, applied by the job once every
document is scored (spark_stages/classifier_rules.py).

A model is a file from elsewhere (prep/classify/fasttext_bin.py); a model that cannot be read, or a label it
does not have, is a ValueError naming the classifier, before any document is read.
"""

import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from prep.classify.classifier import Classifier, labels_named
from prep.classify.fasttext_bin import ModelError

COMBINE = ("", "mean", "max")
# Score quantiles a classifier's buckets may number: each is found by passes over the corpus (Nemotron-CC uses 20);
# 200,000 took 45 s on 180 documents
MAX_BUCKETS = 1000
# A classifier's name is in its columns' names (and every reason classifier:NAME), which every later stage and
# the user's own Spark read: a dot there is a field of a struct to Spark, and PySpark's mapInArrow cannot take it.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


@dataclass(frozen=True)
class ClassifierConfig:
    """One classifier documents are scored with, and the rules on its score."""
    model: str = ""  # its model file (OUT/model.bin of jobs.train_classifier); empty for an ensemble (combine)
    label: str = ""  # score_NAME is the probability of this label
    combine: str = ""  # mean | max: an ensemble, scored by the mean or max of the classifiers `of` names
    of: list[str] = field(default_factory=list)  # the classifiers an ensemble combines
    min_score: float | None = None  # a document the rules kept, scoring under this, is rejected (classifier:NAME)
    keep_top: float | None = None  # keep this share of the documents the rules kept, the best by score (exact)
    buckets: int = 0  # > 0: bucket_NAME, 0 (lowest) to buckets - 1, the score's quantile over the kept documents
    keep_labels: list[str] = field(default_factory=list)  # keep only documents whose best label is one of these

    def __post_init__(self):
        if self.combine not in COMBINE:
            raise ValueError(f"combine must be mean or max, got {self.combine!r}")
        if self.keep_top is not None and not 0 < self.keep_top <= 1:
            raise ValueError(f"keep_top is a share in (0, 1], got {self.keep_top}")
        if self.min_score is not None and not 0 <= self.min_score <= 1:  # 1.5 rejected every document
            raise ValueError(f"min_score is a probability in [0, 1], got {self.min_score}")
        if not (self.buckets == 0 or 2 <= self.buckets <= MAX_BUCKETS):
            raise ValueError(f"buckets must be 0 (none) or 2 to {MAX_BUCKETS}, got {self.buckets}")


def score_column(name: str) -> str:
    return f"score_{name}"


def bucket_column(name: str) -> str:
    return f"bucket_{name}"


def label_column(name: str) -> str:
    return f"label_{name}"


def label_score_column(name: str) -> str:
    return f"label_score_{name}"


class Classifiers:
    """The classifiers of a configuration, their models read and checked (on the driver; then broadcast)."""

    def __init__(self, configs: dict[str, ClassifierConfig]):
        self.configs = dict(configs)
        self.models: dict[str, Classifier] = {}
        self.label_index: dict[str, int] = {}
        for name, cfg in self.configs.items():
            if not NAME.fullmatch(name):
                raise ValueError(f"classifier {name[:60]!r}: a name is letters, digits, '_' and '-', from a letter "
                                 "or a digit, at most 100 (it names columns)")
            if bool(cfg.model) == bool(cfg.combine) or bool(cfg.combine) != bool(cfg.of) or bool(cfg.model) != bool(
                    cfg.label):
                raise ValueError(f"classifier {name}: give a model and the label it scores, or combine (mean or max) "
                                 "and the classifiers `of` it")
            if cfg.model:
                try:
                    model = Classifier.load(cfg.model)
                    self.label_index[name] = model.label_index(cfg.label, cfg.model)
                    missing = [label for label in cfg.keep_labels if label not in model.labels]
                    if missing:
                        raise ModelError(f"{cfg.model}: no label {missing[0]!r} (its labels: "
                                         f"{labels_named(model.labels)})")
                except ModelError as e:
                    raise ValueError(f"classifier {name}: {e}") from None
                self.models[name] = model
        for name, cfg in self.configs.items():
            unknown = [member for member in cfg.of if member not in self.models]
            if unknown or (cfg.keep_labels and name not in self.models):
                raise ValueError(f"classifier {name}: combines {unknown[0]!r}, which is not a classifier with a "
                                 "model" if unknown else f"classifier {name}: keep_labels needs a model of its own")
        columns = self.columns()
        if twice := next((column for column in columns if columns.count(column) > 1), None):
            raise ValueError(f"classifiers: {twice} would be a column of two classifiers (rename one: a classifier "
                             "NAME writes score_NAME, label_NAME, label_score_NAME and bucket_NAME)")

    def __bool__(self) -> bool:
        return bool(self.configs)

    def fields(self) -> list[pa.Field]:
        """The columns scoring adds: score_NAME, and label_NAME with label_score_NAME for a model of more than
        two labels (or one with keep_labels)."""
        out = [pa.field(score_column(name), pa.float32()) for name in self.configs]
        for name in self._labelled():
            out += [pa.field(label_column(name), pa.string()), pa.field(label_score_column(name), pa.float32())]
        return out

    def columns(self) -> list[str]:
        """The names of every column the classifiers write: `fields`, and bucket_NAME of those with buckets."""
        return [f.name for f in self.fields()] + [bucket_column(name) for name, cfg in self.configs.items()
                                                  if cfg.buckets]

    def _labelled(self) -> list[str]:
        return [name for name, model in self.models.items()
                if len(model.labels) > 2 or self.configs[name].keep_labels]

    def scores(self, texts: list[str]) -> dict[str, np.ndarray | list]:
        """The columns of `fields` for the texts."""
        out: dict[str, np.ndarray | list] = {}
        labelled = self._labelled()
        for name, model in self.models.items():
            probabilities = model.probabilities(texts) if texts else np.zeros((0, len(model.labels)), np.float32)
            out[score_column(name)] = probabilities[:, self.label_index[name]]
            if name in labelled:
                best = probabilities.argmax(axis=1)
                out[label_column(name)] = [model.labels[i] for i in best.tolist()]
                out[label_score_column(name)] = probabilities[np.arange(len(best)), best]
        for name, cfg in self.configs.items():
            if cfg.combine:
                members = np.stack([out[score_column(m)] for m in cfg.of]) if texts else np.zeros((1, 0))
                out[score_column(name)] = (members.mean(axis=0) if cfg.combine == "mean"
                                           else members.max(axis=0)).astype(np.float32)
        return out

    def rejection(self, columns: dict, i: int) -> str | None:
        """Why document i (its columns from `scores`) is rejected by min_score or keep_labels, or None."""
        for name, cfg in self.configs.items():
            if cfg.min_score is not None and columns[score_column(name)][i] < cfg.min_score:
                return f"classifier:{name}"
            if cfg.keep_labels and columns[label_column(name)][i] not in cfg.keep_labels:
                return f"classifier:{name}"
        return None

    def global_rules(self) -> dict[str, ClassifierConfig]:
        """The classifiers with a rule over the whole corpus (keep_top, buckets)."""
        return {name: cfg for name, cfg in self.configs.items() if cfg.keep_top is not None or cfg.buckets}
