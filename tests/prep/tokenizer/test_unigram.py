"""The Unigram stage of the hybrid: E-step counts, pruning, required characters, and the trained
tokenizers of all three algorithms on the sample (lossless, exact size, specials safe, hybrid > BPE)."""

from collections import Counter

import numpy as np
import pytest

from prep.tokenizer.base import BOS, EOS, PAD, special_tokens
from prep.tokenizer.lattice import expected_counts, trie
from prep.tokenizer.pretokenize import byte_alphabet, to_symbols
from prep.tokenizer.report import evaluate
from prep.tokenizer.train import TokenizerConfig, train_local
from prep.tokenizer.unigram import (
    SPECIAL_SCORE,
    UnigramConfig,
    fit,
    local_e_step,
    removal_loss,
    required_characters,
)
from tests.fuzz_text import fuzz_strings


def test_e_step_counts_viterbi_pieces_weighted_by_pre_token_counts():
    pieces = ["a", "b", "ab"]
    model = trie(pieces, np.log([0.2, 0.2, 0.6]))
    freq, tokens = expected_counts(model, ["abab", "ba"], [3, 1])
    assert freq.tolist() == [1.0, 1.0, 6.0] and tokens == 8.0


def test_removal_loss_protects_bytes_and_frees_unused_pieces():
    pieces = ["a", "b", "ab", "ba"]
    scores = np.log([0.3, 0.3, 0.3, 0.1])
    loss = removal_loss(pieces, scores, np.array([5.0, 5.0, 4.0, 0.0]), {"a", "b"})
    assert loss[0] == loss[1] == np.inf and loss[3] == 0
    assert loss[2] == pytest.approx(4 * (scores[2] - scores[0] - scores[1]))


def test_required_characters_cover_the_text_within_the_limit():
    counts = {"的": 50, "a": 30, "b": 15, "c": 5}
    assert required_characters(counts, 0.8, 10) == [to_symbols("的"), "a"]
    assert required_characters(counts, 0.99, 10) == [to_symbols("的"), "a", "b", "c"]
    assert required_characters(counts, 0.99, 2) == [to_symbols("的"), "a"]


def test_fit_prunes_to_the_target_and_keeps_every_byte_and_required_character():
    words = Counter({to_symbols(w): n for w, n in [(" the", 50), (" then", 10), (" there", 8), ("中文", 6)]})
    seed = [to_symbols(p) for p in [" t", " th", " the", "en", " then", "re", " there", "中", "文", "中文"]]
    cfg = UnigramConfig(shrink=0.5)
    target = 256 + 5
    pieces, scores, history = fit(seed, [to_symbols("文")], target, local_e_step(words), cfg)
    assert len(pieces) == target and set(byte_alphabet()) <= set(pieces) and to_symbols("文") in pieces
    assert to_symbols(" the") in pieces  # the most used piece survives
    assert history[-1]["tokens"] >= history[0]["tokens"]  # fewer pieces never give fewer tokens here


@pytest.fixture(scope="module")
def trained(split_sample, trained_on_sample):
    return {"hybrid": trained_on_sample("hybrid"), "bpe": trained_on_sample("bpe"),
            "unigram": train_local(split_sample[1][:600], TokenizerConfig(vocab_size=4096, algorithm="unigram"))}


@pytest.mark.parametrize("algorithm", ["hybrid", "bpe", "unigram"])
def test_round_trip_is_exact_on_fuzz_and_held_out_text(trained, split_sample, algorithm):
    tokenizer, _ = trained[algorithm]
    for text in [*fuzz_strings(), *split_sample[0]]:
        assert tokenizer.decode(tokenizer.encode(text).ids, skip_special_tokens=False) == text


@pytest.mark.parametrize("algorithm", ["hybrid", "bpe", "unigram"])
def test_size_and_special_tokens(trained, algorithm):
    tokenizer, details = trained[algorithm]
    assert tokenizer.get_vocab_size() == 4096 and details["filled_with_reserved"] == 0
    assert [tokenizer.token_to_id(t) for t in (BOS, EOS, PAD)] == [0, 1, 2]
    specials = {tokenizer.token_to_id(t) for t in special_tokens()}
    assert not specials & set(tokenizer.encode(f"end here {EOS} and {BOS}{PAD} go on").ids)


def test_hybrid_compresses_held_out_text_better_than_bpe_of_the_same_size(trained, split_sample):
    held = {"all": split_sample[0]}
    hybrid = evaluate(trained["hybrid"][0], {"en": held["all"]})["all"]["bytes_per_token"]
    bpe = evaluate(trained["bpe"][0], {"en": held["all"]})["all"]["bytes_per_token"]
    assert hybrid >= 1.02 * bpe  # measured +3.1% at 4096 (README); the bar leaves room for library changes


def test_too_small_a_corpus_fills_with_reserved_tokens():
    tokenizer, details = train_local(["only a few words here, twice: only a few words"],
                                     TokenizerConfig(vocab_size=1024, algorithm="hybrid"))
    assert tokenizer.get_vocab_size() == 1024 and details["filled_with_reserved"] > 0
    assert tokenizer.decode(tokenizer.encode("only a few").ids) == "only a few"


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="algorithm"):
        TokenizerConfig(algorithm="wordpiece")
    with pytest.raises(ValueError, match="cannot hold"):
        TokenizerConfig(vocab_size=200)


def test_report_of_an_empty_held_out_set_has_no_gain_rather_than_a_crash(trained):
    from prep.tokenizer.report import gain

    empty = evaluate(trained["bpe"][0], {})
    assert empty["all"]["tokens"] == 0 and gain(empty, evaluate(trained["hybrid"][0], {})) == {}


def test_a_vocabulary_or_seed_past_what_readers_accept_is_refused_before_training():
    # a vocab_size of 10**12 or a seed_factor of 1e12 passed, and training aborted the process (a Rust
    # allocation failure, SIGABRT) instead of the job's one-line error; over 2**24 every reader refused the file
    from prep.tokenizer.train import MAX_TRAINED_VOCAB
    from schemas.index import MAX_VOCAB_SIZE

    with pytest.raises(ValueError, match="vocab_size"):
        TokenizerConfig(vocab_size=10**12, algorithm="bpe")
    with pytest.raises(ValueError, match="vocab_size"):
        TokenizerConfig(vocab_size=MAX_VOCAB_SIZE + 128, algorithm="unigram")
    with pytest.raises(ValueError, match="seed_factor"):
        TokenizerConfig(vocab_size=1024, unigram=UnigramConfig(seed_factor=1e12))
    with pytest.raises(ValueError, match="seed_factor"):
        TokenizerConfig(vocab_size=1024, unigram=UnigramConfig(seed_factor=float("inf")))
    assert TokenizerConfig(vocab_size=MAX_TRAINED_VOCAB, algorithm="bpe").vocab_size == MAX_TRAINED_VOCAB


def test_settings_that_would_train_a_tokenizer_the_shards_job_refuses_are_refused(monkeypatch):
    """Found by the review of 2026-12-07: a vocabulary of 300,032 (filled with reserved tokens), pieces of
    2,048 bytes, a length penalty of 1e6 (the special tokens' score became the cheaper spelling of their text)
    trained tokenizers the shards job refused or that put <|eos|> inside documents; a shrink of 0.9999 pruned
    one piece a round."""
    from prep.ingest.inputs import InputError
    from prep.tokenizer import encode
    from prep.tokenizer.base import MAX_PIECE_BYTES
    from prep.tokenizer.bpe import BpeConfig
    from prep.tokenizer.superwords import SuperwordConfig
    from spark_stages.tokenizer import readable

    with pytest.raises(ValueError, match="vocab_size"):
        TokenizerConfig(vocab_size=300_032)
    with pytest.raises(ValueError, match="max_token_bytes"):
        BpeConfig(max_token_bytes=MAX_PIECE_BYTES + 1)
    with pytest.raises(ValueError, match="max_superword_bytes"):
        SuperwordConfig(max_superword_bytes=2048)
    with pytest.raises(ValueError, match="length_penalty"):
        UnigramConfig(length_penalty=1e6)
    with pytest.raises(ValueError, match="shrink"):
        UnigramConfig(shrink=0.9999)
    assert UnigramConfig(shrink=0.99, length_penalty=1_000).shrink == 0.99

    tokenizer, _ = train_local(["a few words of text"] * 5, TokenizerConfig(vocab_size=384, algorithm="bpe"))
    readable(tokenizer)  # what it trains, it reads
    monkeypatch.setattr(encode, "MAX_PIECES_CHARACTERS", 300)  # what a larger vocabulary's pieces pass
    monkeypatch.setattr(encode, "_CHECKED", {})  # (what was checked under the bound before: no run changes it)
    with pytest.raises(InputError, match="not written, as the shards job would not read it"):
        readable(tokenizer)


@pytest.mark.parametrize("sample", [[], [""]])
def test_plain_unigram_on_an_empty_sample_is_an_input_error_not_a_file_of_null_scores(sample):
    # the `tokenizers` trainer gave NaN scores, written as null: the job died on reading its own file back
    from prep.ingest.inputs import InputError

    with pytest.raises(InputError, match="sample"):
        train_local(sample, TokenizerConfig(vocab_size=512, algorithm="unigram"))


def test_plain_unigram_scores_are_finite_and_its_specials_never_chosen_by_viterbi():
    import json
    import math

    tokenizer, _ = train_local(["the cat sat on the mat. " * 20], TokenizerConfig(vocab_size=512, algorithm="unigram"))
    vocab = json.loads(tokenizer.to_str())["model"]["vocab"]
    assert all(math.isfinite(score) for _, score in vocab)
    specials = vocab[:len(special_tokens())]
    assert [piece for piece, _ in specials] == special_tokens()
    assert all(score <= SPECIAL_SCORE for _, score in specials)  # as the hybrid's: only ever inserted by id
