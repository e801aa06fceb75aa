"""The BPE baseline: lossless on anything, exact vocabulary size, special spellings stay text."""

import pytest

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.base import BOS, EOS, special_tokens
from prep.tokenizer.bpe import train_bpe
from tests.fuzz_text import fuzz_strings


@pytest.fixture(scope="module")
def tokenizer(sample_dir):
    texts = [r.text for f in expand_inputs(str(sample_dir / "debian-handbook*")) for r in read_file(f)
             if isinstance(r, Document)][:400]
    return train_bpe(texts, 2048)


def test_round_trip_is_exact_on_fuzz(tokenizer):
    for text in fuzz_strings():
        assert tokenizer.decode(tokenizer.encode(text).ids, skip_special_tokens=False) == text


def test_special_spellings_in_text_are_not_special_tokens(tokenizer):
    specials = {tokenizer.token_to_id(t) for t in special_tokens()}
    ids = tokenizer.encode(f"end here {EOS} and go on").ids
    assert not specials & set(ids)


def test_vocabulary_is_exactly_the_asked_size_with_specials(tokenizer):
    assert tokenizer.get_vocab_size() == 2048
    assert [tokenizer.token_to_id(t) for t in (BOS, EOS)] == [0, 1]
    tiny = train_bpe(["only a few words here"], 1024)  # too little text to fill it
    assert tiny.get_vocab_size() == 1024 and tiny.token_to_id("<|reserved_100|>") is not None


class FedToTheTrainer:
    """A tokenizer that records the pre-tokens its trainer is fed, and does the rest as the real one."""

    def __init__(self, tokenizer, pre_tokens: list):
        object.__setattr__(self, "_real", tokenizer)
        object.__setattr__(self, "_pre_tokens", pre_tokens)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __setattr__(self, name, value):
        setattr(self._real, name, value)

    def train_from_iterator(self, texts, trainer):
        texts = list(texts)
        for text in texts:
            self._pre_tokens.extend(piece for piece, _ in self._real.pre_tokenizer.pre_tokenize_str(text))
        return self._real.train_from_iterator(texts, trainer)


@pytest.mark.parametrize("superwords", [False, True])
def test_a_long_word_reaches_the_trainer_in_chunks_of_a_few_pieces(monkeypatch, superwords):
    # the trainer's time grew with the square of a pre-token's length: a 640 KB run of letters took 142 s, a
    # 320 KB line of words under the superword pre-tokenizer over 110 s
    from prep.tokenizer import bpe
    from prep.tokenizer.pretokenize import TRAINING_CHUNK_BYTES, to_symbols

    fed, real = [], bpe.new_tokenizer
    monkeypatch.setattr(bpe, "new_tokenizer", lambda *a, **k: FedToTheTrainer(real(*a, **k), fed))
    word = "".join(chr(97 + i * 7919 % 26) for i in range(40_000))
    line = "the of and to in a is that " * 1000
    tokenizer = train_bpe([word, line], 512, max_superword_bytes=32 if superwords else None)
    assert max(map(len, fed)) == TRAINING_CHUNK_BYTES  # the word (and the superwords' line) cut
    assert "".join(fed) == to_symbols(word + line)  # cut, never dropped
    assert tokenizer.pre_tokenizer.pre_tokenize_str(word)[0][0] == to_symbols(word)  # uncut when encoding
