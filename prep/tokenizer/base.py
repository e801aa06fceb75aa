"""What every tokenmill tokenizer shares: the pre-tokenizer and decoder, the special tokens and the
exact vocabulary size.

The special tokens come first (ids 0, 1, 2 = bos, eos, pad, then reserved ones) whatever the model,
so shards and loaders can rely on them. The vocabulary size is the total, specials included; when
the corpus is too small for that many pieces, the rest is filled with reserved tokens, so the
embedding size is always what was asked.
"""

from tokenizers import AddedToken, Tokenizer

from prep.tokenizer.pretokenize import decoder, pre_tokenizer

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
RESERVED = 16  # reserved special tokens beyond bos/eos/pad, for later use without resizing
# the longest piece tokenmill reads (prep/tokenizer/encode.py) and so trains: its own are at most a few dozen
# bytes (a run of spaces in code, 80); a 4,000-byte piece made a 400,000-letter document take 15 s to encode
MAX_PIECE_BYTES = 1024


def special_tokens() -> list[str]:
    return [BOS, EOS, PAD] + [f"<|reserved_{i}|>" for i in range(RESERVED)]


def is_special(piece: str) -> bool:
    return piece in (BOS, EOS, PAD) or piece.startswith("<|reserved_")


def new_tokenizer(model, superwords: bool = False) -> Tokenizer:
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizer(superwords)
    tokenizer.decoder = decoder()
    return tokenizer


def from_json(text: str) -> Tokenizer:
    """A saved tokenizer, with its specials matched by id only, as when it was trained:
    `encode_special_tokens` is a runtime setting that tokenizer.json does not keep.

    Truncation and padding are switched off rather than the file refused: they are runtime settings of
    whoever saved it (a model's input length), not of its vocabulary; kept, they cut every document to a
    few tokens or put pad ids inside it, where documents are cut by the packer and padded by id. The
    compiled encoder ignores them too, so both encoders give the same ids."""
    tokenizer = Tokenizer.from_str(text)
    tokenizer.encode_special_tokens = True
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def finish(tokenizer: Tokenizer, vocab_size: int) -> Tokenizer:
    """Special tokens matched only by id, never in text; reserved tokens up to exactly vocab_size."""
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in special_tokens()])
    # A document containing the text "<|eos|>" must not end there: specials are inserted by id only.
    tokenizer.encode_special_tokens = True
    missing = vocab_size - tokenizer.get_vocab_size()
    if missing > 0:
        tokenizer.add_special_tokens([AddedToken(f"<|reserved_{RESERVED + i}|>", special=True) for i in range(missing)])
    if tokenizer.get_vocab_size() != vocab_size:
        raise ValueError(f"vocabulary has {tokenizer.get_vocab_size()} entries, {vocab_size} were asked")
    return tokenizer
