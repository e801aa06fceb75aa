"""A classifier's second stage: a small neural network (one hidden layer of tanh units) over a document's
statistics (prep/classify/stats.py) and its n-gram model's log-odds, giving the probability of the positive
label of a two-label classifier.

Why: the n-gram model is linear in its n-grams, and the signs of junk are not: a listing repeats itself and
so does a good manual; prose shuffled from other texts has prose's n-grams and none of its coherence. On the
benchmark's validation part, the n-gram model alone reached ROC AUC 0.87, the statistics through this network
0.975 (docs/classifiers.md).

Trained by full-batch Adam on standardized inputs, each label weighed to half the loss, from a seeded start:
the same examples give the same weights. The n-gram model's log-odds of the training examples come from
models that did not see them (two folds), as stacking wants.
"""

from dataclasses import dataclass

import numpy as np

HIDDEN, STEPS, LEARNING_RATE, L2 = 16, 800, 0.05, 1e-3


@dataclass
class SecondStage:
    mean: np.ndarray  # float32 [inputs]: the standardization
    scale: np.ndarray  # float32 [inputs]
    hidden_weights: np.ndarray  # float32 [inputs, hidden]
    hidden_bias: np.ndarray  # float32 [hidden]
    output_weights: np.ndarray  # float32 [hidden]
    output_bias: float

    def probability(self, inputs: np.ndarray) -> np.ndarray:
        """float32 [documents]: the positive label's probability of each row of inputs [documents, inputs]."""
        hidden = np.tanh(((inputs - self.mean) / self.scale) @ self.hidden_weights + self.hidden_bias)
        return (1 / (1 + np.exp(-(hidden @ self.output_weights + self.output_bias)))).astype(np.float32)


def log_odds(p: np.ndarray) -> np.ndarray:
    p = np.clip(p.astype(np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def fit(inputs: np.ndarray, positive: np.ndarray, seed: int = 0,
        least_scale: np.ndarray | float = 0.0) -> SecondStage:
    """The network of inputs [documents, inputs] whose labels are `positive` (bool [documents]); each input
    standardized by its spread, or by `least_scale` (per input) where that is larger."""
    x = inputs.astype(np.float64)
    y = positive.astype(np.float64)
    mean, scale = x.mean(axis=0), np.maximum(x.std(axis=0) + 1e-6, least_scale)
    z = (x - mean) / scale
    rng = np.random.default_rng(seed)
    params = [rng.normal(0, 1 / np.sqrt(z.shape[1]), (z.shape[1], HIDDEN)), np.zeros(HIDDEN),
              rng.normal(0, 1 / np.sqrt(HIDDEN), HIDDEN), np.zeros(1)]
    share = min(max(y.mean(), 1e-6), 1 - 1e-6)
    weight = np.where(y == 1, 0.5 / share, 0.5 / (1 - share)) / len(y)
    first, second = [np.zeros_like(p) for p in params], [np.zeros_like(p) for p in params]
    for step in range(1, STEPS + 1):
        hidden = np.tanh(z @ params[0] + params[1])
        error = (1 / (1 + np.exp(-(hidden @ params[2] + params[3][0]))) - y) * weight
        back = np.outer(error, params[2]) * (1 - hidden ** 2)
        grads = [z.T @ back + L2 * params[0], back.sum(axis=0), hidden.T @ error + L2 * params[2],
                 np.array([error.sum()])]
        for i, grad in enumerate(grads):  # Adam
            first[i] = 0.9 * first[i] + 0.1 * grad
            second[i] = 0.999 * second[i] + 0.001 * grad ** 2
            params[i] = params[i] - LEARNING_RATE * (first[i] / (1 - 0.9 ** step)) / (
                np.sqrt(second[i] / (1 - 0.999 ** step)) + 1e-8)
    f32 = np.float32
    return SecondStage(mean.astype(f32), scale.astype(f32), params[0].astype(f32), params[1].astype(f32),
                       params[2].astype(f32), float(f32(params[3][0])))
