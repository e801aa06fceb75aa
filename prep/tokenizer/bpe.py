"""Byte-level BPE with tokenmill's pre-tokenizer and special tokens: the plain baseline
and the seed vocabulary of the hybrid. Trained with the `tokenizers` library."""

from collections.abc import Iterable
from dataclasses import dataclass

from tokenizers import Tokenizer, models, trainers

from prep.tokenizer.base import MAX_PIECE_BYTES, finish, new_tokenizer, special_tokens
from prep.tokenizer.pretokenize import byte_alphabet, pre_tokenizer, training_pre_tokenizer


@dataclass(frozen=True)
class BpeConfig:
    min_frequency: int = 2  # a pair seen once is noise, not a merge
    max_token_bytes: int = 16  # longer merges are rare and mostly memorized strings

    def __post_init__(self):
        if self.min_frequency < 1 or not 1 <= self.max_token_bytes <= MAX_PIECE_BYTES:
            raise ValueError(f"bpe: min_frequency must be at least 1 and max_token_bytes from 1 to {MAX_PIECE_BYTES} "
                             f"(the longest piece the shards job reads), got {self.min_frequency}, "
                             f"{self.max_token_bytes}")


def train_bpe(texts: Iterable[str], vocab_size: int, cfg: BpeConfig = BpeConfig(),
              max_superword_bytes: int | None = None) -> Tokenizer:
    """`vocab_size` in all, special tokens included. With `max_superword_bytes`, under the superword
    pre-tokenizer (merges may span words) and with that limit on a piece instead of max_token_bytes."""
    superwords, longest = max_superword_bytes is not None, max_superword_bytes or cfg.max_token_bytes
    tokenizer = new_tokenizer(models.BPE(), superwords=superwords)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=cfg.min_frequency,
                                  special_tokens=special_tokens(), initial_alphabet=byte_alphabet(),
                                  max_token_length=longest, show_progress=False)
    tokenizer.pre_tokenizer = training_pre_tokenizer(superwords)  # one long word must not cost hours
    tokenizer.train_from_iterator(texts, trainer)
    tokenizer.pre_tokenizer = pre_tokenizer(superwords)
    return finish(tokenizer, vocab_size)
