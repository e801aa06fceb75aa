"""Superword pieces: the hybrid tokenizer past the pre-token wall.

Inside pre-tokens, a 131K vocabulary has almost nothing left to win: BPE already spends ~1.09 tokens
per English pre-token. Pieces that cross the spaces between words ("of the", " in order to") do win
(SuperBPE, Liu et al. 2025; BoundlessBPE). With `superwords` the hybrid gets a second seed and a
coarser pre-tokenization:

1. the subword seed as always: BPE under the fine pre-tokenizer;
2. the superword seed: BPE under the superword pre-tokenizer (prep/tokenizer/pretokenize.py: split
   only at newlines, digit groups and the edges of CJK runs), pieces up to `max_superword_bytes`; of
   its pieces the superwords are those the subword seed cannot hold: spanning more than one fine
   pre-token, or longer than a subword may be (phrases inside CJK runs, which have no spaces);
3. the Unigram EM and pruning over the table of superword pre-tokens decide which pieces of both
   seeds survive; every pruning round keeps at most `superword_share` of its pieces in superwords
   (the transition setting: it bounds the superwords' share of the vocabulary).

The tokenizer stays byte-level and lossless, with the superword pre-tokenizer in its tokenizer.json.
A prompt that ends inside a superword ("... in order" where "in order to" is one piece) is encoded
differently from the same words inside a longer text: generation from it starts off the path the
model saw in training (the "partial token" problem, as with any piece ending in a space).
"""

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prep.tokenizer.base import MAX_PIECE_BYTES, is_special
from prep.tokenizer.bpe import BpeConfig, train_bpe
from prep.tokenizer.pretokenize import piece_bytes, pre_tokenizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuperwordConfig:
    superwords: bool = False  # learn pieces that span words (a second seed); off: pieces stay inside pre-tokens
    max_superword_bytes: int = 32  # the longest a superword piece may be
    superword_share: float = 0.25  # the transition: superwords take at most this share of the vocabulary
    # the superword BPE reads at most this much of the sample: its words are whole lines, and the
    # `tokenizers` trainer holds ~70 bytes of memory per byte of them
    superword_sample_bytes: int = 64_000_000

    def __post_init__(self):
        if (not 0 < self.superword_share <= 1 or not 2 <= self.max_superword_bytes <= MAX_PIECE_BYTES
                or self.superword_sample_bytes < 1):
            raise ValueError(f"superword_share must be in (0, 1], max_superword_bytes from 2 to {MAX_PIECE_BYTES} (the "
                             f"longest piece the shards job reads) and superword_sample_bytes positive, got "
                             f"{self.superword_share}, "
                             f"{self.max_superword_bytes}, {self.superword_sample_bytes}")


_FINE = pre_tokenizer()


def is_superword(piece: str, max_subword_bytes: int = BpeConfig.max_token_bytes) -> bool:
    """Whether a piece (in byte symbols) is one the subword seed cannot hold: it spans more than one
    pre-token of the fine pre-tokenizer, or is longer than a subword may be (a phrase of a CJK run)."""
    if len(piece) > max_subword_bytes:
        return True
    text = piece_bytes(piece).decode("utf-8", errors="ignore")  # a piece may start or end inside a character
    return len(_FINE.pre_tokenize_str(text)) > 1


def head(texts: Iterable[str], size: int) -> Iterator[str]:
    """The texts up to `size` bytes of them (the sample is in hash order: its head is a hash sample too)."""
    for text in texts:
        size -= len(text.encode())
        if size < 0:
            return
        yield text


def superword_seed(sample: Iterable[str], count: int, bpe_size: int, bpe: BpeConfig,
                   cfg: SuperwordConfig) -> list[str]:
    """The first `count` superwords, in merge order, of a BPE of `bpe_size` under the superword
    pre-tokenizer, trained on the sample's first `superword_sample_bytes`."""
    tokenizer = train_bpe(head(sample, cfg.superword_sample_bytes), bpe_size, bpe,
                          max_superword_bytes=cfg.max_superword_bytes)
    ordered = [p for p, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1]) if not is_special(p)]
    spanning = [p for p in ordered if is_superword(p, bpe.max_token_bytes)]
    log.info("superwords: %d of the %d pieces of the superword BPE are superwords; %d kept for the seed",
             len(spanning), len(ordered), min(count, len(spanning)))
    return spanning[:count]
