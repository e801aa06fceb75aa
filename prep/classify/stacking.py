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

# The log-odds the second stage learns from are those of models trained on half the examples; the model it
# scores with is trained on all of them, and is surer. Where the halves learned next to nothing (a few hundred
# examples, few epochs), their log-odds spread over hundredths, and standardizing by that spread turned the
# whole model's log-odds of 1 into inputs of 150 standard deviations: every document got one score (found
# by trying: the pipeline's DCLM recipe on 277 documents scored every document 0.0005). A spread under one
# nat is taken as one: log-odds that close say nothing, and a sure model's are not blown up.
LEAST_ODDS_SCALE = 1.0


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
        scorer = Scorer(half, f"the n-gram model of half the examples (fold {fold})")
        odds[score] = mlp.log_odds(scorer.probabilities([lines[i] for i in score])[:, half.labels.index(positive)])
    inputs = np.column_stack([stats, odds])
    least = np.r_[np.zeros(stats.shape[1]), LEAST_ODDS_SCALE]
    model.second_stage = mlp.fit(inputs, np.array([label == positive for label in labels]), cfg.init_seed, least)
    model.positive = 0
    return model, loss


def words_learned_little(model: SupervisedModel) -> bool:
    """Whether the log-odds the n-gram models of half the examples gave the other half spread under
    LEAST_ODDS_SCALE (the floor the second stage took): it then rests on the documents' statistics more than
    on their words (a few hundred examples, few epochs), which a user can change with more of either."""
    stage = model.second_stage
    return stage is not None and float(stage.scale[-1]) <= LEAST_ODDS_SCALE
