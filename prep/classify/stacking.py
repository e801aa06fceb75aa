"""A two-label classifier in two stages: the n-gram model (prep/classify/train.py) and, over each document's
statistics (prep/classify/stats.py) and that model's log-odds, the second stage (prep/classify/mlp.py).

The second stage learns from log-odds the n-gram model would give documents it has not seen: the examples
are cut in two folds, each scored by a model trained on the other; then the n-gram model is trained on them
all. A classifier of more labels (domains) is the n-gram model alone.
"""

import numpy as np

from prep.classify import mlp
from prep.classify.fasttext_bin import SupervisedModel
from prep.classify.predict import Scorer
from prep.classify.train import TrainConfig, train


def train_classifier(lines: list[str], stats: np.ndarray, labels: list[str], folds: np.ndarray,
                     cfg: TrainConfig) -> tuple[SupervisedModel, float]:
    """(the model of the examples: text forms `lines`, statistics `stats` [examples, features], `labels`,
    each example's fold 0 or 1; the n-gram model's training loss)."""
    model, loss = train(lines, labels, cfg)
    if len(model.labels) != 2:
        return model, loss
    positive = model.labels[0]
    odds = np.zeros(len(lines))
    for fold in (0, 1):
        train_on, score = np.flatnonzero(folds != fold), np.flatnonzero(folds == fold)
        if len({labels[i] for i in train_on}) < 2 or not len(score):
            continue  # too few examples to stack: the log-odds stay 0 (the second stage learns without them)
        half, _ = train([lines[i] for i in train_on], [labels[i] for i in train_on], cfg)
        odds[score] = mlp.log_odds(Scorer(half).probabilities([lines[i] for i in score])[:, half.labels.index(
            positive)])
    inputs = np.column_stack([stats, odds])
    model.second_stage = mlp.fit(inputs, np.array([label == positive for label in labels]), cfg.init_seed)
    model.positive = 0
    return model, loss
