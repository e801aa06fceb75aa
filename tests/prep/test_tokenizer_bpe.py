"""The BPE baseline: lossless on anything, exact vocabulary size, special spellings stay text."""

import random

import pytest

from prep.inputs import expand_inputs
from prep.readers import Document, read_file
from prep.tokenizer_bpe import BOS, EOS, BpeConfig, special_tokens, train_bpe


@pytest.fixture(scope="module")
def tokenizer(sample_dir):
    texts = [r.text for f in expand_inputs(str(sample_dir / "debian-handbook*")) for r in read_file(f)
             if isinstance(r, Document)][:400]
    return train_bpe(texts, BpeConfig(vocab_size=2048))


def fuzz_strings(seed=0):
    rng = random.Random(seed)
    planes = [(0x20, 0x7E), (0xA0, 0x2FF), (0x300, 0x36F), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF),
              (0x10000, 0x1FFFF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F), (0xF0000, 0xFFFFD), (0x0, 0x1F)]
    for _ in range(200):
        lo, hi = rng.choice(planes)
        yield "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 60)))
    yield "👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 thumbs"  # emoji ZWJ and modifier sequences
    yield "e\u0301\u0302\u0303 combining marks and \u200b zero width"
    yield "\x00\x01\x07\x1b[31m control characters \x7f\x85"
    yield " " * 100_000
    yield "a line of one megabyte " * 45_000
    yield "mixed 中文 English 日本語 한국어 עברית العربية 123456789"
    yield f"text with {BOS} and {EOS} and <|pad|> and <|reserved_3|> spelled out"


def test_round_trip_is_exact_on_fuzz(tokenizer):
    for text in fuzz_strings():
        assert tokenizer.decode(tokenizer.encode(text).ids, skip_special_tokens=False) == text


def test_special_spellings_in_text_are_not_special_tokens(tokenizer):
    specials = {tokenizer.token_to_id(t) for t in special_tokens()}
    ids = tokenizer.encode(f"end here {EOS} and go on").ids
    assert not specials & set(ids)


def test_vocabulary_is_exactly_the_asked_size_with_specials(tokenizer, sample_dir):
    assert tokenizer.get_vocab_size() == 2048
    assert [tokenizer.token_to_id(t) for t in (BOS, EOS)] == [0, 1]
    tiny = train_bpe(["only a few words here"], BpeConfig(vocab_size=1024))  # too little text to fill it
    assert tiny.get_vocab_size() == 1024 and tiny.token_to_id("<|reserved_100|>") is not None
