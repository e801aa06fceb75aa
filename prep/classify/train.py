"""fastText's supervised training, compiled and on one core: each example's hidden vector is the mean of its
words' and word n-grams' rows, a softmax over the labels, stochastic gradient descent with the learning rate
falling linearly to 0 over the epochs (fastText's Model::update and SoftmaxLoss, one thread).

One thread is what makes it exact: fastText's threads update the rows without locks (Hogwild), so its
models differ run to run; here the same examples in the same order with the same settings give the same
model, byte for byte. The rows are only those of the words and the n-gram buckets the examples hold (the
others would stay at their random start and add noise), stored as fastText stores pruned buckets.
"""

from dataclasses import dataclass

import numpy as np

from prep.classify.fasttext_bin import EOS, MAX_DIM, MAX_NGRAMS, MAX_WORD_BYTES, SupervisedModel
from prep.classify.features import Tokens, ngram_buckets, tokens_of
from prep.classify.text import TEXT_FORM
from prep.compiled import kernel

# Weights past this size: the training diverged (a learning rate too high); products of such rows overflow float32
DIVERGED = 1e17


class Diverged(ValueError):
    """The weights of a training ran away; the message names the learning rate."""


@dataclass(frozen=True)
class TrainConfig:
    """How a classifier is trained (fastText's supervised arguments, and the text it reads)."""
    dim: int = 64  # the size of the hidden vector (fastText's -dim)
    epoch: int = 5  # passes over the examples (-epoch)
    lr: float = 0.5  # the learning rate at the start, falling linearly to 0 (-lr)
    word_ngrams: int = 2  # word n-grams of 1 to this many tokens (-wordNgrams); Chinese and Japanese: characters
    bucket: int = 2_000_000  # the n-gram hash space (-bucket); only the buckets the examples hold get a row
    min_count: int = 1  # words seen fewer times are left out of the vocabulary (-minCount)
    max_tokens: int = 1024  # tokens of a document read, from its start (prep/classify/text.py)
    init_seed: int = 0  # the rows' random start

    def __post_init__(self):
        if not (0 < self.dim <= MAX_DIM and self.epoch >= 1 and self.lr > 0 and 1 <= self.word_ngrams <= MAX_NGRAMS
                and 0 < self.bucket < 2**31 and self.min_count >= 1 and self.max_tokens >= 1):
            raise ValueError(f"need 0 < dim <= {MAX_DIM}, epoch >= 1, lr > 0, 1 <= word_ngrams <= {MAX_NGRAMS}, "
                             "0 < bucket < 2^31, min_count >= 1, max_tokens >= 1")
        if self.init_seed < 0:  # numpy's generator takes none
            raise ValueError(f"init_seed must be at least 0, got {self.init_seed}")


def train(lines: list[str], labels: list[str], cfg: TrainConfig) -> tuple[SupervisedModel, float]:
    """(the model of `lines` (text form, at most cfg.max_tokens tokens of text: its vocabulary says so)
    labelled `labels`, trained in their order; its mean training loss over the last epoch)."""
    if len(lines) != len(labels):
        raise ValueError(f"{len(lines)} examples and {len(labels)} labels: one label an example")
    tokens = tokens_of(lines)
    words, word_counts, word_of_token = _vocabulary(tokens, cfg.min_count)
    words.append(f"{TEXT_FORM}:{cfg.max_tokens}".encode())  # how the lines were made: what scoring reads
    word_counts = np.append(word_counts, 0)
    grams, gram_starts = ngram_buckets(tokens.fnv, tokens.line_starts, cfg.word_ngrams, cfg.bucket)
    kept, gram_rows = np.unique(grams, return_inverse=True)
    features, starts = _features(word_of_token, tokens.line_starts, gram_rows.astype(np.int64) + len(words),
                                 gram_starts)
    names, target, label_counts = _labels(labels)
    rng = np.random.default_rng(cfg.init_seed)
    weights_in = rng.uniform(-1 / cfg.dim, 1 / cfg.dim, (len(words) + len(kept), cfg.dim)).astype(np.float32)
    weights_out = np.zeros((len(names), cfg.dim), np.float32)
    line_tokens = np.diff(tokens.line_starts)
    loss = _sgd(features, starts, target, line_tokens, weights_in, weights_out, np.float64(cfg.lr), cfg.epoch)
    # (max and min: a NaN makes both fail the test, and no copy of the rows is made)
    if not all(-DIVERGED < rows.min(initial=0) and rows.max(initial=0) < DIVERGED
               for rows in (weights_in, weights_out)):
        raise Diverged(f"the training diverged (weights past {DIVERGED:g}, or not finite): a lower lr than {cfg.lr:g}")
    model = SupervisedModel(words, word_counts, names, label_counts, cfg.word_ngrams, cfg.bucket,
                            kept.astype(np.int32), weights_in, weights_out, cfg.epoch, tokens=int(line_tokens.sum()))
    return model, float(loss)


def _vocabulary(tokens: Tokens, min_count: int) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """(the words seen at least min_count times, by count then bytes; their counts; each token's word or -1).
    A word longer than a model file's word may be (a checksum, a run of letters) is left out, as a rare one:
    its n-grams still count."""
    keys = _keys(tokens.data, tokens.start, tokens.length)
    distinct, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    spelled = [EOS if tokens.start[i] < 0 else tokens.data[tokens.start[i]:tokens.start[i] + tokens.length[i]].tobytes()
               for i in first.tolist()]
    order = sorted((k for k in range(len(distinct)) if counts[k] >= min_count and len(spelled[k]) <= MAX_WORD_BYTES),
                   key=lambda k: (-counts[k], spelled[k]))
    word_of_key = np.full(len(distinct), -1, np.int64)
    word_of_key[order] = np.arange(len(order))
    return [spelled[k] for k in order], counts[order].astype(np.int64), word_of_key[inverse]


@kernel
def _keys(data, start, length):
    """A 64-bit FNV-1a of each token's bytes (of "</s>" for start -1): the vocabulary groups tokens by it."""
    keys = np.empty(len(start), np.uint64)
    for i in range(len(start)):
        h = np.uint64(14695981039346656037)
        if start[i] < 0:
            h = np.uint64(0x5EED)  # "</s>": apart from any token, which is never empty
        else:
            for k in range(start[i], start[i] + length[i]):
                h = (h ^ np.uint64(data[k])) * np.uint64(1099511628211)
        keys[i] = h
    return keys


@kernel
def _features(word_of_token, line_starts, gram_rows, gram_starts):
    """Each line's input rows in fastText's order: its words' (those in the vocabulary), then its n-grams'."""
    lines = len(line_starts) - 1
    out = np.empty(len(word_of_token) + len(gram_rows), np.int64)
    starts = np.zeros(lines + 1, np.int64)
    k = 0
    for t in range(lines):
        for i in range(line_starts[t], line_starts[t + 1]):
            if word_of_token[i] >= 0:
                out[k] = word_of_token[i]
                k += 1
        for i in range(gram_starts[t], gram_starts[t + 1]):
            out[k] = gram_rows[i]
            k += 1
        starts[t + 1] = k
    return out[:k], starts


def _labels(labels: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(the label names by count then name, as fastText orders them; each example's label; their counts)."""
    names, counts = np.unique(np.array(labels, dtype=object), return_counts=True)
    order = sorted(range(len(names)), key=lambda k: (-counts[k], names[k]))
    if len(order) < 2:
        raise ValueError(f"a classifier needs examples of two labels at least, got {list(names)}")
    unwritable = [name for name in names if not name or "\0" in name or len(name.encode()) > MAX_WORD_BYTES]
    if unwritable:  # a model file could not hold it
        raise ValueError(f"a label must be 1 to {MAX_WORD_BYTES} bytes without NUL, got {unwritable[0][:60]!r}")
    index = {names[k]: i for i, k in enumerate(order)}
    return [str(names[k]) for k in order], np.array([index[label] for label in labels], np.int64), \
        counts[order].astype(np.int64)


@kernel
def _sgd(features, starts, target, line_tokens, weights_in, weights_out, lr, epochs):
    """fastText's supervised updates, example by example; returns the mean loss of the last epoch."""
    dim, labels = weights_in.shape[1], weights_out.shape[0]
    hidden = np.zeros(dim, np.float32)
    grad = np.zeros(dim, np.float32)
    output = np.zeros(labels, np.float32)
    total = np.float64(epochs) * np.float64(line_tokens.sum())
    done = np.float64(0)
    loss, seen = 0.0, 0
    for _epoch in range(epochs):
        loss, seen = 0.0, 0
        for t in range(len(starts) - 1):
            a, b = starts[t], starts[t + 1]
            rate = np.float32(lr * (1.0 - done / total))
            done += line_tokens[t]
            if a == b:
                continue
            hidden[:] = 0
            for k in range(a, b):
                hidden += weights_in[features[k]]
            hidden *= np.float32(1.0 / (b - a))
            _softmax(weights_out, hidden, output)
            loss -= np.log(output[target[t]] + 1e-5)
            seen += 1
            grad[:] = 0
            for i in range(labels):
                alpha = rate * (np.float32(1.0 if i == target[t] else 0.0) - output[i])
                grad += alpha * weights_out[i]
                weights_out[i] += alpha * hidden
            grad *= np.float32(1.0 / (b - a))
            for k in range(a, b):
                weights_in[features[k]] += grad
    return loss / max(seen, 1)


@kernel
def _softmax(weights_out, hidden, output):
    """output = softmax(weights_out . hidden), in float32 as fastText's SoftmaxLoss::computeOutput."""
    for i in range(weights_out.shape[0]):
        d = np.float32(0)
        for k in range(hidden.shape[0]):
            d += weights_out[i, k] * hidden[k]
        output[i] = d
    top = output.max()
    z = np.float32(0)
    for i in range(output.shape[0]):
        output[i] = np.float32(np.exp(output[i] - top))
        z += output[i]
    for i in range(output.shape[0]):
        output[i] /= z
