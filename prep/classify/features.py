"""The inputs of a supervised fastText model, computed as fastText computes them, over many lines in one
compiled pass: each line's tokens (split on white space, "</s>" after the last), their 32-bit FNV-1a hashes,
and the word n-gram buckets (Dictionary::getLine and addWordNgrams of fastText 0.9: a bucket is the n
hashes folded by h * 116049371 + next, in 64 bits from the 32-bit hashes read as signed, modulo the buckets).

Lines are the classifier's text form (prep/classify/text.py): each token short, "</s>" never one.
"""

from typing import NamedTuple

import numpy as np

from prep.compiled import kernel
from prep.fasttext_predict import _fnv_byte, _is_separator

EOS = b"</s>"
NGRAM_BASE = np.uint64(116049371)


class Tokens(NamedTuple):
    """Every line's tokens, one after another; "</s>" closes each line (start -1)."""
    data: np.ndarray  # uint8: the lines' UTF-8 bytes, one after another
    start: np.ndarray  # int64 [tokens]: a token's first byte in data, -1 for "</s>"
    length: np.ndarray  # int64 [tokens]
    fnv: np.ndarray  # uint32 [tokens]: fastText's hash of the token
    line_starts: np.ndarray  # int64 [lines + 1]: each line's first token


def tokens_of(lines: list[str]) -> Tokens:
    encoded = [line.encode("utf-8") for line in lines]
    starts = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(b) for b in encoded], out=starts[1:])
    data = np.frombuffer(b"".join(encoded), np.uint8)
    return Tokens(data, *_split(data, starts, np.frombuffer(EOS, np.uint8)))


@kernel
def _split(data, starts, eos):
    lines = len(starts) - 1
    # a line of n bytes holds (n + 1) // 2 tokens at most (a byte and a separator each; none between lines),
    # and "</s>"
    most = (len(data) + lines) // 2 + lines
    start = np.empty(most, np.int64)
    length = np.empty(most, np.int64)
    fnv = np.empty(most, np.uint32)
    line_starts = np.zeros(lines + 1, np.int64)
    eos_hash = np.uint64(2166136261)
    for k in range(len(eos)):
        eos_hash = _fnv_byte(eos_hash, eos[k])
    n = 0
    for t in range(lines):
        pos, end = starts[t], starts[t + 1]
        while pos < end:
            while pos < end and _is_separator(data[pos]):
                pos += 1
            if pos == end:
                break
            h = np.uint64(2166136261)
            first = pos
            while pos < end and not _is_separator(data[pos]):
                h = _fnv_byte(h, data[pos])
                pos += 1
            start[n], length[n], fnv[n] = first, pos - first, np.uint32(h)
            n += 1
        start[n], length[n], fnv[n] = -1, len(eos), np.uint32(eos_hash)
        n += 1
        line_starts[t + 1] = n
    return start[:n], length[:n], fnv[:n], line_starts


@kernel
def signed(h):
    """A 32-bit hash as fastText's vector<int32_t> holds it, widened to 64 bits as C++ widens it."""
    return np.uint64(np.int64(np.int32(h)))


@kernel
def ngram_buckets(fnv, line_starts, word_ngrams, bucket):
    """Each line's word n-gram buckets (n of 2 to word_ngrams), in fastText's order; and where each line's
    begin (int64 [lines + 1])."""
    lines = len(line_starts) - 1
    total = 0
    for t in range(lines):
        size = line_starts[t + 1] - line_starts[t]
        for n in range(2, word_ngrams + 1):
            total += max(0, size - n + 1)
    out = np.empty(total, np.int64)
    out_starts = np.zeros(lines + 1, np.int64)
    k = 0
    for t in range(lines):
        first, last = line_starts[t], line_starts[t + 1]
        for i in range(first, last):
            h = signed(fnv[i])
            for j in range(i + 1, min(last, i + word_ngrams)):
                h = h * NGRAM_BASE + signed(fnv[j])
                out[k] = np.int64(h % np.uint64(bucket))
                k += 1
        out_starts[t + 1] = k
    return out, out_starts
