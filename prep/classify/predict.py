"""The scores of a supervised model (prep/classify/fasttext_bin.py) for many documents at once, compiled: the
probability of every label, as fastText's predict computes them (its dictionary's open-addressing table, the
word n-gram buckets, the mean of their rows, the output matrix, the softmax), without a string per token or a
map lookup per n-gram: a dense table of the buckets' rows. A bucket the model does not hold is a row of
zeros: it counts in the mean and adds nothing, as in the model written whole for fastText.

The model is linear up to the softmax: the output of the mean of the rows is the mean of each row's output.
So each row's output (a number per label) is computed once, when the model is read, and a document adds
those (two numbers for two labels) rather than its rows (dim numbers): fastText's predict spends its time
adding rows. In float64, where fastText adds float32: the same probabilities to about 1e-6.

The table has a row per bucket the model declares, and a model is a file from elsewhere: past DENSE_LOGITS
(unless the file holds a row for each) a bucket's row is found by a binary search of the buckets the model
keeps, so that a small file claiming 2^31 buckets is not 8 GB of table.
"""

import numpy as np

from prep.classify.fasttext_bin import ModelError, SupervisedModel
from prep.classify.features import NGRAM_BASE, signed, tokens_of
from prep.compiled import kernel
from prep.fasttext_predict import word_table

DENSE_LOGITS = 1 << 25  # the most numbers a dense table of buckets' outputs holds (128 MB) when fewer are kept
NUMBERS_AT_ONCE = 1 << 17  # a block's rows, or their outputs, in float64 (1 MB each)


class Scorer:
    """A model made ready to score: its word table, and the output of each of its words' and buckets' rows."""

    def __init__(self, model: SupervisedModel, source: str = "the model"):
        self.labels, self.word_ngrams, self.bucket = model.labels, model.word_ngrams, model.bucket
        words = model.words
        self.word_starts = np.zeros(len(words) + 1, np.int64)
        np.cumsum([len(w) for w in words], out=self.word_starts[1:])
        self.word_bytes = np.frombuffer(b"".join(words), np.uint8)
        try:
            self.word_table = word_table(self.word_bytes, self.word_starts, int(np.ceil(len(words) / 0.7)) + 1,
                                         source)
        except ValueError as e:
            raise ModelError(str(e)) from None
        # each row's output (float32: a document sums them in float64), what a document adds up; computed in
        # float64 a block of rows at a time (the whole in float64 would be twice the table), each block's rows
        # and outputs of about NUMBERS_AT_ONCE numbers whatever the labels and dimensions; finite weights whose
        # products pass float32's range would make every score NaN, which passes every threshold
        logits = np.empty((len(model.input), len(model.labels)), np.float32)
        output = model.output.astype(np.float64).T
        rows = max(1, NUMBERS_AT_ONCE // max(len(model.labels), model.dim))
        with np.errstate(over="ignore"):  # (checked)
            for at in range(0, len(model.input), rows):
                logits[at:at + rows] = model.input[at:at + rows].astype(np.float64) @ output
                if not np.isfinite(logits[at:at + rows]).all():
                    raise ModelError(f"{source}: weights whose products are not finite in float32")
        self.word_logits = np.ascontiguousarray(logits[:len(words)])
        self.kept_buckets = np.ascontiguousarray(model.kept_buckets, np.int32)
        dense = model.bucket * len(model.labels) <= DENSE_LOGITS or len(model.kept_buckets) == model.bucket
        # by bucket (zeros where the model keeps none), else (empty) the kept buckets' in their order
        self.bucket_logits = np.zeros((model.bucket if dense else 0, len(model.labels)), np.float32)
        if dense:
            self.bucket_logits[model.kept_buckets] = logits[len(words):]
        self.kept_logits = np.ascontiguousarray(logits[len(words):]) if not dense else logits[:0]

    def probabilities(self, lines: list[str]) -> np.ndarray:
        """float32 [lines, labels]: each line's (text form) probability of each label (0 for a line with
        no known word or n-gram)."""
        tokens = tokens_of(lines)
        return _score(tokens.data, tokens.start, tokens.length, tokens.fnv, tokens.line_starts, self.word_bytes,
                      self.word_starts, self.word_table, self.word_logits, self.bucket, self.bucket_logits,
                      self.kept_buckets, self.kept_logits, self.word_ngrams)


@kernel
def _word(h, word_bytes, word_starts, table, data, start, length):
    """Dictionary::find from the word's hash h (computed once, for its n-grams too): its index, or -1. The
    probe of prep/fasttext_predict._probe, written again: calling that kernel here halved the scoring speed
    (54 against 100 MB/s, side by side), the call's arrays passed at each of a document's words."""
    slot = np.int64(np.uint64(h) % np.uint64(len(table)))
    while table[slot] != -1:
        word = table[slot]
        first, size = word_starts[word], word_starts[word + 1] - word_starts[word]
        if size == length:
            same = True
            for k in range(length):
                if word_bytes[first + k] != data[start + k]:
                    same = False
                    break
            if same:
                return word
        slot = (slot + 1) % len(table)
    return -1


@kernel
def _score(data, start, length, fnv, line_starts, word_bytes, word_starts, word_table, word_logits, bucket,
           bucket_logits, kept_buckets, kept_logits, word_ngrams):
    lines, labels = len(line_starts) - 1, word_logits.shape[1]
    out = np.zeros((lines, labels), np.float32)
    logits = np.zeros(labels, np.float64)
    eos = np.array([60, 47, 115, 62], np.uint8)  # "</s>"
    buckets = np.uint64(max(bucket, 1))
    for t in range(lines):
        logits[:] = 0
        rows = 0
        first, last = line_starts[t], line_starts[t + 1]
        for i in range(first, last):
            if start[i] < 0:
                word = _word(fnv[i], word_bytes, word_starts, word_table, eos, 0, 4)
            else:
                word = _word(fnv[i], word_bytes, word_starts, word_table, data, start[i], length[i])
            if word >= 0:
                for k in range(labels):
                    logits[k] += word_logits[word, k]
                rows += 1
        for i in range(first, last):
            h = signed(fnv[i])
            for j in range(i + 1, min(last, i + word_ngrams)):
                h = h * NGRAM_BASE + signed(fnv[j])
                b = np.int64(h % buckets)
                rows += 1  # a bucket training never saw is a row of zeros, as in the model written whole
                if len(bucket_logits):
                    for k in range(labels):
                        logits[k] += bucket_logits[b, k]
                else:
                    found = np.searchsorted(kept_buckets, b)
                    if found < len(kept_buckets) and kept_buckets[found] == b:
                        for k in range(labels):
                            logits[k] += kept_logits[found, k]
        if rows == 0:
            continue
        logits /= rows
        logits -= logits.max()
        total = np.exp(logits).sum()
        for k in range(labels):
            out[t, k] = np.exp(logits[k]) / total
    return out
