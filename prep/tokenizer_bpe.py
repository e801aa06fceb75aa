"""Byte-level BPE with tokenmill's pre-tokenizer and special tokens (issue 4's baseline, and the
seed of the hybrid). Trained with the `tokenizers` library.

The vocabulary size is the total, special tokens included. When the corpus is too small for that
many merges, the rest is filled with reserved tokens, so the embedding size is always what was asked.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from tokenizers import AddedToken, Tokenizer, models, trainers

from prep.pretokenize import byte_alphabet, decoder, pre_tokenizer

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
RESERVED = 16  # reserved special tokens beyond bos/eos/pad, for later use without resizing


@dataclass(frozen=True)
class BpeConfig:
    vocab_size: int = 131_072  # total, special tokens included; a multiple of 128 for the embedding
    min_frequency: int = 2  # a pair seen once is noise, not a merge
    max_token_bytes: int = 16  # longer merges are rare and mostly memorized strings


def special_tokens() -> list[str]:
    return [BOS, EOS, PAD] + [f"<|reserved_{i}|>" for i in range(RESERVED)]


def new_tokenizer(model) -> Tokenizer:
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizer()
    tokenizer.decoder = decoder()
    return tokenizer


def finish(tokenizer: Tokenizer, vocab_size: int) -> Tokenizer:
    """Special tokens matched only by id, never in text; reserved tokens up to exactly vocab_size."""
    # A document containing the text "<|eos|>" must not end there: specials are inserted by id only.
    tokenizer.encode_special_tokens = True
    missing = vocab_size - tokenizer.get_vocab_size()
    if missing > 0:
        first = RESERVED
        tokenizer.add_special_tokens([AddedToken(f"<|reserved_{first + i}|>", special=True) for i in range(missing)])
    if tokenizer.get_vocab_size() != vocab_size:
        raise ValueError(f"vocabulary has {tokenizer.get_vocab_size()} entries, {vocab_size} were asked")
    return tokenizer


def train_bpe(texts: Iterable[str], cfg: BpeConfig) -> Tokenizer:
    tokenizer = new_tokenizer(models.BPE())
    trainer = trainers.BpeTrainer(vocab_size=cfg.vocab_size, min_frequency=cfg.min_frequency,
                                  special_tokens=special_tokens(), initial_alphabet=byte_alphabet(),
                                  max_token_length=cfg.max_token_bytes, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return finish(tokenizer, cfg.vocab_size)
