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
