"""The Unigram stage's two loops over every pre-token and every piece, compiled.

- the E-step: the Viterbi segmentation of each pre-token of the (pre-token, count) table, its pieces
  counted times the pre-token's count. It is the encoder's Viterbi (prep/tokenizer/encoder.py, the
  `tokenizers` rules and tie order, tested id for id), so it finds what the `tokenizers` Unigram
  model finds, about ten times faster: superword pre-tokens are whole lines, and the table as large
  as the text;
- the removal loss: the best score of each piece's own bytes segmented without the piece itself.

Both read the pieces from the encoder's trie, built once per model.
"""

import numpy as np

from prep.compiled import code_points_of, kernel
from prep.tokenizer.encoder import UnigramModel, _get, _longest, _viterbi, unigram_trie
from prep.tokenizer.pretokenize import BYTE_SYMBOLS

_SYMBOL_TO_BYTE = np.zeros(max(map(ord, BYTE_SYMBOLS)) + 1, np.uint8)
_SYMBOL_TO_BYTE[[ord(s) for s in BYTE_SYMBOLS]] = np.arange(256, dtype=np.uint8)


def trie(pieces: list[str], scores) -> UnigramModel:
    return unigram_trie(zip(pieces, np.asarray(scores, np.float64).tolist()))


def symbol_bytes(words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Byte-symbol strings as one uint8 array of their bytes and int64 offsets [len(words) + 1]."""
    code_points, offsets = code_points_of(words)
    return _SYMBOL_TO_BYTE[code_points], offsets


def expected_counts(model: UnigramModel, words: list[str], counts) -> tuple[np.ndarray, float]:
    """One chunk's E-step: Viterbi piece counts weighted by the pre-token counts, and the token total."""
    data, offsets = symbol_bytes(words)
    freq = np.zeros(int(model.token.max()) + 1, np.float64)
    tokens = _expected_counts(data, offsets, np.asarray(counts, np.float64), model.children.keys,
                              model.children.values, model.token, model.score, model.longest, freq)
    return freq, tokens


def best_without_themselves(model: UnigramModel, pieces: list[str], wanted: np.ndarray) -> np.ndarray:
    """For each piece where `wanted`, the best score of its bytes segmented without it; else 0."""
    data, offsets = symbol_bytes(pieces)
    best = np.zeros(len(pieces), np.float64)
    _best_without_themselves(data, offsets, wanted, model.children.keys, model.children.values, model.token,
                             model.score, model.longest, best)
    return best


@kernel
def _expected_counts(data, offsets, counts, keys, values, token, score, longest, freq):
    longest_word = _longest(offsets)
    best = np.empty(longest_word + 1, np.float64)
    start = np.empty(longest_word + 1, np.int64)
    piece = np.empty(longest_word + 1, np.int32)
    ids = np.empty(longest_word, np.int32)
    tokens = 0.0
    for w in range(len(offsets) - 1):
        n = _viterbi(data[offsets[w]:offsets[w + 1]], offsets[w + 1] - offsets[w], keys, values, token, score,
                     longest, best, start, piece, ids, 0)
        for k in range(n):
            freq[ids[k]] += counts[w]
        tokens += n * counts[w]
    return tokens


@kernel
def _best_without_themselves(data, offsets, wanted, keys, values, token, score, longest, out):
    best = np.empty(_longest(offsets) + 1, np.float64)
    for p in range(len(offsets) - 1):
        if not wanted[p]:
            continue
        lo, length = offsets[p], offsets[p + 1] - offsets[p]
        best[0] = 0.0
        for e in range(1, length + 1):
            best[e] = -np.inf
        for s in range(length):
            if best[s] == -np.inf:
                continue
            node = 0
            for e in range(s, min(length, s + longest)):
                node = _get(keys, values, node << 8 | data[lo + e])
                if node < 0:
                    break
                if token[node] >= 0 and not (s == 0 and e == length - 1):  # the piece itself
                    candidate = best[s] + score[node]
                    if candidate > best[e + 1]:
                        best[e + 1] = candidate
        out[p] = best[length]
