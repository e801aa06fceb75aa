"""The compiled encoder against `tokenizers` itself: the same ids for every document of the sample and
for tens of thousands of hostile strings, for the hybrid (Unigram), the BPE and the superword hybrid."""

import random

import numpy as np
import pyarrow as pa
import pytest

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.base import from_json
from prep.tokenizer.encoder import Encoder, UnsupportedTokenizer, code_points_of
from prep.tokenizer.superwords import SuperwordConfig
from prep.tokenizer.train import TokenizerConfig, train_local
from tests.fuzz_text import fuzz_strings

# Pieces of text where pre-tokenizers and byte-level models go wrong: case-folded contractions,
# digit groups beside CJK runs and Hangul, CR/LF runs inside spaces, combining marks, astral planes.
ALPHABET = (["'s", "'S", "'ſ", "'re", "'RE", "'Ve", "'ll", "'LL", "'d", "'m", "'t", "'x", "'"]
            + list("abcXYZ019٣५〇一中文日本語カタカナひらがな・ー한국어éñßİıſﬁ½²㎏ﾊﾞ")
            + [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", " \n ", "\u00a0", "\u3000", "\u2028", "\x85", "\x0b"]
            + list("!?.,;:-_=+*/\\|@#$%^&()[]{}<>\"`~") + ["...", "—", "«»", "€", "👍🏽", "\u0301", "\u200d", "𠀀",
                                                           "\U000e0041", "\U0010ffff", "<|eos|>", "12345678"])


def hostile_strings(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(count)]


@pytest.fixture(scope="module")
def sample_texts(sample_dir) -> list[str]:
    return [r.text for f in expand_inputs(str(sample_dir)) for r in read_file(f) if isinstance(r, Document)]


@pytest.fixture(scope="module", params=["hybrid", "bpe", "superwords"])
def tokenizer_json(request, sample_texts) -> str:
    cfg = (TokenizerConfig(vocab_size=8192, superword=SuperwordConfig(superwords=True)) if request.param == "superwords"
           else TokenizerConfig(vocab_size=8192, algorithm=request.param))
    tokenizer, _ = train_local(sample_texts[::4], cfg)
    return tokenizer.to_str()


def assert_same_ids(tokenizer_json: str, texts: list[str]) -> None:
    ids, offsets = Encoder(tokenizer_json).encode_batch(texts)
    expected = from_json(tokenizer_json).encode_batch(texts, add_special_tokens=False)
    assert ids.dtype == np.int32 and len(offsets) == len(texts) + 1
    for i, encoding in enumerate(expected):
        assert ids[offsets[i]:offsets[i + 1]].tolist() == encoding.ids, repr(texts[i][:200])


def test_every_sample_document_gets_the_ids_tokenizers_gives(tokenizer_json, sample_texts):
    assert_same_ids(tokenizer_json, sample_texts)


def test_hostile_strings_get_the_ids_tokenizers_gives(tokenizer_json):
    assert_same_ids(tokenizer_json, hostile_strings(30_000) + list(fuzz_strings()) + ["", " ", "\n"])


def test_a_tokenizer_of_another_shape_is_refused():
    from tokenizers import Tokenizer, models, pre_tokenizers

    other = Tokenizer(models.BPE())
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(UnsupportedTokenizer, match="pre-tokenizer"):
        Encoder(other.to_str())


def test_an_arrow_column_is_decoded_to_the_same_code_points_as_python_strings(sample_texts):
    texts = sample_texts[:300] + hostile_strings(3_000) + list(fuzz_strings()) + ["", "\U0010ffff"]
    expected, expected_starts = code_points_of(texts)
    for column in (pa.array(texts, pa.string()), pa.array(texts, pa.large_string()),
                   pa.array(["skipped"] + texts + ["too"]).slice(1, len(texts))):  # a slice: offsets not from 0
        code_points, starts = code_points_of(column)
        assert np.array_equal(code_points, expected) and np.array_equal(starts, expected_starts)


def test_an_arrow_column_gets_the_same_ids_as_python_strings(tokenizer_json, sample_texts):
    texts = sample_texts[::7] + hostile_strings(1_000)
    encoder = Encoder(tokenizer_json)
    ids, offsets = encoder.encode_batch(texts)
    arrow_ids, arrow_offsets = encoder.encode_batch(pa.array(texts))
    assert np.array_equal(arrow_ids, ids) and np.array_equal(arrow_offsets, offsets)


def test_a_null_text_in_an_arrow_column_is_refused():
    with pytest.raises(ValueError, match="1 null texts"):
        code_points_of(pa.array(["a", None]))
