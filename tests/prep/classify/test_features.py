"""prep/classify/features.py: the tokens, hashes and word n-gram buckets of lines, as fastText's
Dictionary::getLine and addWordNgrams make them (a plain Python rendering of them here), on real lines."""

import numpy as np
import pytest

from prep.classify.features import ngram_buckets, tokens_of
from prep.classify.text import model_line
from tests.shard_fixtures import sample_texts

SEPARATORS = b" \n\r\t\v\f\0"


def fnv(token: bytes) -> int:
    """fastText's Dictionary::hash: FNV-1a over the bytes read as signed chars, 32 bits."""
    h = 2166136261
    for b in token:
        h = ((h ^ (b | 0xFFFFFF00 if b >= 0x80 else b)) * 16777619) & 0xFFFFFFFF
    return h


def reference(line: str, word_ngrams: int, bucket: int) -> tuple[list[bytes], list[int]]:
    """A line's tokens ("</s>" last) and its n-gram buckets, as fastText computes them."""
    data = line.encode()
    tokens, word = [], b""
    for b in data:
        if b in SEPARATORS:
            if word:
                tokens.append(word)
            word = b""
        else:
            word += bytes([b])
    tokens += [word] if word else []
    tokens.append(b"</s>")
    hashes = [fnv(t) - (1 << 32) if fnv(t) >= 1 << 31 else fnv(t) for t in tokens]  # vector<int32_t>
    grams = []
    for i in range(len(hashes)):
        h = hashes[i] % (1 << 64)  # uint64_t h = hashes[i]: sign-extended
        for j in range(i + 1, min(len(hashes), i + word_ngrams)):
            h = (h * 116049371 + hashes[j]) % (1 << 64)
            grams.append(h % bucket)
    return tokens, grams


@pytest.fixture(scope="module")
def lines() -> list[str]:
    texts = sample_texts(["debian-faq.en", "debian-faq.zh", "debian-handbook.en", "debian-handbook.zh"])[::25]
    raw = ["tabs\tand\x0bvertical\x0cfeeds\rand\x00nul", "  leading and trailing  ", "", "x", "é ü 中"]
    return [model_line(t, 200) for t in texts] + raw


@pytest.mark.parametrize("word_ngrams, bucket", [(1, 16), (2, 2**16), (3, 2_000_000), (5, 7)])
def test_tokens_hashes_and_buckets_are_fasttexts(lines, word_ngrams, bucket):
    found = tokens_of(lines)
    grams, gram_starts = ngram_buckets(found.fnv, found.line_starts, word_ngrams, bucket)
    for t, line in enumerate(lines):
        tokens, expected = reference(line, word_ngrams, bucket)
        span = range(found.line_starts[t], found.line_starts[t + 1])
        got = [b"</s>" if found.start[i] < 0 else found.data[found.start[i]:found.start[i] + found.length[i]].tobytes()
               for i in span]
        assert got == tokens, line[:80]
        assert [int(found.fnv[i]) for i in span] == [fnv(token) for token in tokens]
        assert grams[gram_starts[t]:gram_starts[t + 1]].tolist() == expected, line[:80]


def test_lines_of_one_short_token_each():
    """Documents of one character ("7", ".", "-") are lines of one byte and no separator: their tokens,
    "</s>" after each, once overflowed the arrays sized for them (and crashed the scoring process)."""
    lines = ["0", ".", "-", "a", "中", ""] * 7
    found = tokens_of(lines)
    assert len(found.start) == len(found.length) == len(found.fnv) == found.line_starts[-1] == 2 * len(lines) - 7
    assert np.array_equal(np.diff(found.line_starts), [2, 2, 2, 2, 2, 1] * 7)
