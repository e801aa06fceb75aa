"""The compiled E-step and removal loss against straightforward references: the `tokenizers` Unigram
model's own Viterbi, and a Python dynamic program over the pieces."""

import math

import numpy as np
import pytest
from tokenizers import Tokenizer

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.lattice import best_without_themselves, expected_counts, trie
from prep.tokenizer.pretokenize import byte_alphabet
from prep.tokenizer.train import TokenizerConfig, train_local
from prep.tokenizer.unigram import count_pre_tokens, unigram_model


@pytest.fixture(scope="module", params=[False, True], ids=["pre-tokens", "superword pre-tokens"])
def table_and_model(request, sample_dir):
    texts = [r.text for f in expand_inputs(str(sample_dir))[:6] for r in read_file(f) if isinstance(r, Document)]
    counts = count_pre_tokens(texts, superwords=request.param)
    bpe, _ = train_local(texts, TokenizerConfig(vocab_size=2048, algorithm="bpe"))
    pieces = list(dict.fromkeys([*byte_alphabet(), *(p for p in bpe.get_vocab() if not p.startswith("<|"))]))
    scores = np.random.default_rng(0).uniform(-12, -2, len(pieces))
    return counts, pieces, scores


def test_e_step_counts_what_the_tokenizers_viterbi_finds(table_and_model):
    counts, pieces, scores = table_and_model
    words, weights = list(counts), np.array(list(counts.values()), np.float64)
    freq, tokens = expected_counts(trie(pieces, scores), words, weights)
    reference = Tokenizer(unigram_model(pieces, scores)).encode_batch(words, add_special_tokens=False)
    expected = np.zeros(len(pieces))
    for encoding, weight in zip(reference, weights):
        np.add.at(expected, encoding.ids, weight)
    assert np.array_equal(freq, expected) and tokens == expected.sum()


def best_without(piece: str, score: dict[str, float]) -> float:
    best = [0.0] + [-math.inf] * len(piece)
    for end in range(1, len(piece) + 1):
        for start in range(end):
            s = score.get(piece[start:end]) if end - start < len(piece) else None
            if s is not None and best[start] + s > best[end]:
                best[end] = best[start] + s
    return best[-1]


def test_removal_scores_equal_a_plain_dynamic_program(table_and_model):
    _, pieces, scores = table_and_model
    wanted = np.arange(len(pieces)) % 3 != 0
    best = best_without_themselves(trie(pieces, scores), pieces, wanted)
    score = dict(zip(pieces, scores.tolist()))
    expected = [best_without(p, score) if w else 0.0 for p, w in zip(pieces, wanted)]
    assert best.tolist() == expected and -math.inf in expected  # single bytes have no other segmentation
