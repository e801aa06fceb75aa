"""The scores of a supervised model (prep/classify/fasttext_bin.py) for many documents at once, compiled: the
probability of every label, as fastText's predict computes them (its dictionary's open-addressing table, the
word n-gram buckets, the rows summed in its order in float32, the softmax), without a string per token or a
map lookup per n-gram: a dense table of the buckets' rows. A bucket the model does not hold is a row of
zeros: it counts in the mean and adds nothing, as in the model written whole for fastText.

The table has a row per bucket the model declares, and a model is a file from elsewhere: past DENSE_BUCKETS
(unless the file holds a row for each) a bucket's row is found by a binary search of the buckets the model
keeps, so that a small file claiming 2^31 buckets is not 8 GB of table.
"""

import numpy as np

from prep.classify.fasttext_bin import SupervisedModel
from prep.classify.features import NGRAM_BASE, signed, tokens_of
from prep.classify.train import _softmax
from prep.compiled import kernel
from prep.fasttext_predict import _slot, _word_table

DENSE_BUCKETS = 1 << 24  # the most buckets a dense table is made for (64 MB) when the model keeps fewer rows


class Scorer:
    """A model made ready to score: its word table and its buckets' rows."""

    def __init__(self, model: SupervisedModel):
        self.labels, self.word_ngrams, self.bucket = model.labels, model.word_ngrams, model.bucket
        words = model.words
        self.word_starts = np.zeros(len(words) + 1, np.int64)
        np.cumsum([len(w) for w in words], out=self.word_starts[1:])
        self.word_bytes = np.frombuffer(b"".join(words), np.uint8)
        self.word_table = _word_table(self.word_bytes, self.word_starts, int(np.ceil(len(words) / 0.7)) + 1)
        self.kept_buckets = np.ascontiguousarray(model.kept_buckets, np.int32)
        dense = model.bucket <= DENSE_BUCKETS or len(model.kept_buckets) == model.bucket
        self.bucket_rows = np.full(model.bucket if dense else 0, -1, np.int32)  # empty: search kept_buckets
        if dense:
            self.bucket_rows[model.kept_buckets] = len(words) + np.arange(len(model.kept_buckets), dtype=np.int32)
        self.input, self.output = np.ascontiguousarray(model.input), np.ascontiguousarray(model.output)

    def probabilities(self, lines: list[str]) -> np.ndarray:
        """float32 [lines, labels]: each line's (text form) probability of each label (0 for a line with
        no known word or n-gram)."""
        tokens = tokens_of(lines)
        return _score(tokens.data, tokens.start, tokens.length, tokens.fnv, tokens.line_starts, self.word_bytes,
                      self.word_starts, self.word_table, self.bucket, self.bucket_rows, self.kept_buckets,
                      self.word_ngrams, self.input, self.output)


@kernel
def _bucket_row(b, bucket_rows, kept_buckets, words):
    """The input row of bucket b, or -1: from the dense table, or (none made) by a binary search."""
    if len(bucket_rows):
        return bucket_rows[b]
    k = np.searchsorted(kept_buckets, b)
    return words + k if k < len(kept_buckets) and kept_buckets[k] == b else -1


@kernel
def _score(data, start, length, fnv, line_starts, word_bytes, word_starts, word_table, bucket, bucket_rows,
           kept_buckets, word_ngrams, weights_in, weights_out):
    lines, dim, labels = len(line_starts) - 1, weights_in.shape[1], weights_out.shape[0]
    out = np.zeros((lines, labels), np.float32)
    hidden = np.zeros(dim, np.float32)
    output = np.zeros(labels, np.float32)
    eos = np.array([60, 47, 115, 62], np.uint8)  # "</s>"
    buckets, words = np.uint64(max(bucket, 1)), len(word_starts) - 1
    for t in range(lines):
        hidden[:] = 0
        rows = 0
        first, last = line_starts[t], line_starts[t + 1]
        for i in range(first, last):
            if start[i] < 0:
                slot = _slot(word_bytes, word_starts, word_table, eos, 0, 4)
            else:
                slot = _slot(word_bytes, word_starts, word_table, data, start[i], length[i])
            word = word_table[slot]
            if word >= 0:
                hidden += weights_in[word]
                rows += 1
        for i in range(first, last):
            h = signed(fnv[i])
            for j in range(i + 1, min(last, i + word_ngrams)):
                h = h * NGRAM_BASE + signed(fnv[j])
                row = _bucket_row(np.int64(h % buckets), bucket_rows, kept_buckets, words)
                rows += 1  # a bucket training never saw is a row of zeros, as in the model written whole
                if row >= 0:
                    hidden += weights_in[row]
        if rows == 0:
            continue
        hidden *= np.float32(1.0 / rows)
        _softmax(weights_out, hidden, output)
        out[t] = output
    return out
