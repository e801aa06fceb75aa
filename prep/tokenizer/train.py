"""Training any of the three tokenizers from a sample and, for the hybrid, the whole corpus's counts.

- `bpe`: plain byte-level BPE on the sample (prep/tokenizer/bpe.py);
- `unigram`: plain Unigram on the sample, with the `tokenizers` trainer (SentencePiece's algorithm);
- `hybrid`: BPE on the sample at `seed_factor` times the size gives the seed; the Unigram stage
  (prep/tokenizer/unigram.py) fits and prunes it over the (pre-token, count) table of the whole corpus.
  With `superwords`, a second seed of pieces that span words joins it and the table is of the
  coarser superword pre-tokens (prep/tokenizer/superwords.py).

All three share the pre-tokenizer, the byte-level decoder and the special tokens, so they differ
only in their model. The corpus side (sample, counts, E-step) is passed in: local for tests, Spark
for the job.
"""

import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from tokenizers import Tokenizer, models, trainers

from prep.ingest.inputs import InputError
from prep.tokenizer.base import is_special, new_tokenizer, special_tokens
from prep.tokenizer.bpe import BpeConfig, train_bpe
from prep.tokenizer.pretokenize import byte_alphabet, training_pre_tokenizer
from prep.tokenizer.superwords import SuperwordConfig, is_superword, superword_seed
from prep.tokenizer.unigram import (
    EStep,
    UnigramConfig,
    count_characters,
    count_pre_tokens,
    fit,
    local_e_step,
    required_characters,
    unigram_tokenizer,
)
from schemas.index import MAX_VOCAB_SIZE

ALGORITHMS = ("hybrid", "bpe", "unigram")
# the largest vocabulary trained (Gemma's, the largest of a released model): past it, a tokenizer's pieces
# together outgrow what the shards job reads (encode.MAX_PIECES_CHARACTERS; a small corpus filled to
# 300,032 with reserved tokens did), and a million pieces took 2 GB to write; checked again after training
MAX_TRAINED_VOCAB = 1 << 18
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenizerConfig:
    vocab_size: int = 131_072  # total, specials included; a multiple of 128 (the embedding matrix)
    algorithm: str = "hybrid"  # or the plain baselines "bpe" and "unigram", same pre-tokenizer
    bpe: BpeConfig = field(default_factory=BpeConfig)  # the BPE baseline and the hybrid's seed
    unigram: UnigramConfig = field(default_factory=UnigramConfig)
    superword: SuperwordConfig = field(default_factory=SuperwordConfig)

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}: one of {', '.join(ALGORITHMS)}")
        if self.superword.superwords and self.algorithm != "hybrid":
            raise ValueError(f"superwords are a stage of the hybrid, not of algorithm {self.algorithm!r}")
        if self.vocab_size < 256 + len(special_tokens()) + 1:
            raise ValueError(f"vocab_size {self.vocab_size} cannot hold the 256 bytes and the special tokens")
        # past what every reader of tokenizers and shards accepts, training itself aborted the process
        # (a Rust allocation failure) rather than failing with a message
        if self.vocab_size > MAX_TRAINED_VOCAB:
            raise ValueError(f"vocab_size {self.vocab_size} is over {MAX_TRAINED_VOCAB}, the most tokenmill trains")
        if self.algorithm == "hybrid" and not self.unigram.seed_factor * self.vocab_size <= MAX_VOCAB_SIZE:
            raise ValueError(f"unigram.seed_factor {self.unigram.seed_factor} times vocab_size {self.vocab_size} "
                             f"is a seed of over {MAX_VOCAB_SIZE} pieces")


@dataclass
class Corpus:
    """What training reads. `sample()` may be called more than once and yields the same texts."""
    sample: Callable[[], Iterable[str]]
    # built lazily (counting the whole corpus is the expensive part); over superword pre-tokens with superwords
    e_step: Callable[[], EStep]
    char_counts: Callable[[], dict[str, int]]


def bpe_of_size(corpus: Corpus, cfg: TokenizerConfig, vocab_size: int) -> Tokenizer:
    return train_bpe(corpus.sample(), vocab_size, cfg.bpe)


# The `tokenizers` Unigram trainer is not a function of its input: its scores move by an ulp or two from
# run to run (sums in another order), and it scores the characters it must keep but did not learn at its
# lowest score plus 0.0001 per character before, in the order of a hash set. Scores are rounded to this,
# far above the ulps (a flip needs a score within 1e-14 of a rounding boundary), and those characters
# all get the lowest score; pieces are then ordered by (-score, piece).
SCORE_DECIMALS = 4
UNLEARNED_CHARACTERS_SPAN = 256 * 1e-4


def train_plain_unigram(corpus: Corpus, cfg: TokenizerConfig) -> Tokenizer:
    """`tokenizers`' Unigram trainer on the sample, its scores and order made deterministic (above)."""
    tokenizer = new_tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = training_pre_tokenizer(False)
    trainer = trainers.UnigramTrainer(vocab_size=cfg.vocab_size, special_tokens=special_tokens(),
                                      initial_alphabet=byte_alphabet(), max_piece_length=cfg.bpe.max_token_bytes,
                                      show_progress=False)
    sample = _Measured(corpus.sample())
    tokenizer.train_from_iterator(sample, trainer)
    if not sample.bytes:  # the trainer gives NaN scores, which tokenizer.json writes as null: unreadable
        raise InputError("the sample holds no text to train the unigram tokenizer on (raise --sample-bytes)")
    learned = [(p, s) for p, s in json.loads(tokenizer.to_str())["model"]["vocab"] if not is_special(p)]
    if not all(isinstance(s, float) and math.isfinite(s) for _, s in learned):
        raise InputError(f"the unigram trainer gave scores that are not numbers on a sample of {sample.bytes} "
                         "bytes (raise --sample-bytes)")
    learned = _deterministic(learned)
    return unigram_tokenizer([p for p, _ in learned], [s for _, s in learned], cfg.vocab_size)


def _deterministic(learned: list[tuple[str, float]]) -> list[tuple[str, float]]:
    rounded = [(p, round(s, SCORE_DECIMALS)) for p, s in learned]
    lowest = min((s for _, s in rounded), default=0.0)
    rounded = [(p, lowest if len(p) == 1 and s <= lowest + UNLEARNED_CHARACTERS_SPAN else s) for p, s in rounded]
    return sorted(rounded, key=lambda ps: (-ps[1], ps[0]))


class _Measured:
    """The texts of an iterable, counting their UTF-8 bytes as they pass."""

    def __init__(self, texts: Iterable[str]):
        self.texts, self.bytes = texts, 0

    def __iter__(self) -> Iterator[str]:
        for text in self.texts:
            self.bytes += len(text.encode())
            yield text


def train_hybrid(corpus: Corpus, cfg: TokenizerConfig) -> tuple[Tokenizer, dict]:
    target = cfg.vocab_size - len(special_tokens())
    seed_size = int(cfg.unigram.seed_factor * cfg.vocab_size)
    log.info("hybrid: training the BPE seed of %d pieces", seed_size)
    seed_tokenizer = bpe_of_size(corpus, cfg, seed_size)
    seed = [p for p, _ in sorted(seed_tokenizer.get_vocab().items(), key=lambda kv: kv[1]) if not is_special(p)]
    log.info("hybrid: BPE seed of %d pieces", len(seed))
    superwords, share = [], cfg.superword.superword_share
    if cfg.superword.superwords:
        superwords = superword_seed(corpus.sample(), int(cfg.unigram.seed_factor * share * target), seed_size,
                                    cfg.bpe, cfg.superword)
    limit = int(cfg.unigram.max_required_share * target)
    required = required_characters(corpus.char_counts(), cfg.unigram.character_coverage, limit)
    pieces, scores, history = fit(seed, required, target, corpus.e_step(), cfg.unigram, superwords, share)
    details = {"seed_pieces": len(seed), "required_characters": len(required), "pieces": len(pieces),
               "rounds": history}
    if cfg.superword.superwords:
        details.update(superword_seed_pieces=len(superwords),
                       superwords=sum(is_superword(p, cfg.bpe.max_token_bytes) for p in pieces))
    return unigram_tokenizer(pieces, scores, cfg.vocab_size, cfg.superword.superwords), details


def train(corpus: Corpus, cfg: TokenizerConfig) -> tuple[Tokenizer, dict]:
    """The tokenizer of `cfg.algorithm`, and what its training found worth reporting."""
    if cfg.algorithm == "bpe":
        tokenizer, details = bpe_of_size(corpus, cfg, cfg.vocab_size), {}
    elif cfg.algorithm == "unigram":
        tokenizer, details = train_plain_unigram(corpus, cfg), {}
    else:
        tokenizer, details = train_hybrid(corpus, cfg)
    details["learned_pieces"] = sum(1 for p in tokenizer.get_vocab() if not is_special(p))
    details["filled_with_reserved"] = cfg.vocab_size - details["learned_pieces"] - len(special_tokens())
    return tokenizer, details


def local_corpus(texts: list[str], superwords: bool = False) -> Corpus:
    """Everything in memory: the sample is the whole corpus (tests, experiments)."""
    return Corpus(sample=lambda: iter(texts), e_step=lambda: local_e_step(count_pre_tokens(texts, superwords)),
                  char_counts=lambda: count_characters(texts))


def train_local(texts: list[str], cfg: TokenizerConfig):
    return train(local_corpus(texts, cfg.superword.superwords), cfg)

