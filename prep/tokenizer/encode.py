"""Encoding documents: for shards, <|bos|> tokens <|eos|> as uint32 arrays; for reports, flat ids.

A tokenizer is loaded once per process (Spark reuses its Python workers across tasks), keyed by its
SHA-256, and encodes a batch of documents per call: no Python object per token.
"""

import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from tokenizers import Tokenizer

from prep.tokenizer.base import BOS, EOS, PAD, from_json
from prep.tokenizer.encoder import Encoder, UnsupportedTokenizer

_LOADED: dict[str, "BatchEncoder"] = {}


@dataclass(frozen=True)
class TokenizerFile:
    """A tokenizer as shipped to executors: its JSON text, its hash and its special ids."""
    json: str
    sha256: str
    vocab_size: int
    bos_id: int
    eos_id: int
    pad_id: int

    @classmethod
    def read(cls, path: str) -> "TokenizerFile":
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            tokenizer = Tokenizer.from_str(text)
        except Exception as e:  # the Rust side raises plain Exceptions
            raise ValueError(f"{path}: not a tokenizers file: {e}") from e
        ids = {t: tokenizer.token_to_id(t) for t in (BOS, EOS, PAD)}
        if None in ids.values():
            raise ValueError(f"{path}: the tokenizer lacks {', '.join(t for t, i in ids.items() if i is None)}")
        return cls(text, hashlib.sha256(text.encode()).hexdigest(), tokenizer.get_vocab_size(), ids[BOS], ids[EOS],
                   ids[PAD])

    def encoder(self) -> "BatchEncoder":
        return batch_encoder(self.json, self.sha256)


# texts (a list or an Arrow string array) → (int32 ids of every text one after another, int64 offsets
# [len(texts) + 1])
BatchEncoder = Callable[["list[str] | pa.StringArray"], tuple[np.ndarray, np.ndarray]]


def batch_encoder(tokenizer_json: str, sha256: str | None = None) -> BatchEncoder:
    """The encoder of a tokenizer, made once per process: tokenmill's compiled one (prep/tokenizer/
    encoder.py: the same ids, several times faster) for the tokenizers tokenmill trains, the `tokenizers`
    library for any other. Special tokens' spellings are text either way."""
    key = sha256 or hashlib.sha256(tokenizer_json.encode()).hexdigest()
    if key not in _LOADED:
        try:
            _LOADED[key] = Encoder(tokenizer_json).encode_batch
        except UnsupportedTokenizer:
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one task per core already
            _LOADED[key] = functools.partial(_encode_with_tokenizers, from_json(tokenizer_json))
    return _LOADED[key]


def _encode_with_tokenizers(tokenizer: Tokenizer, texts) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(texts, pa.Array):
        texts = texts.to_pylist()
    encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(e.ids) for e in encodings], out=offsets[1:])
    return np.fromiter((i for e in encodings for i in e.ids), np.int32, int(offsets[-1])), offsets


def encode_flat(tokenizer_file: TokenizerFile, texts) -> tuple[np.ndarray, np.ndarray]:
    """<|bos|> ids <|eos|> of every text (a list or an Arrow string array), one after another
    (uint32), and their int64 offsets."""
    ids, offsets = tokenizer_file.encoder()(texts)
    out = np.empty(len(ids) + 2 * len(texts), np.uint32)
    ends = offsets[1:] + 2 * np.arange(1, len(texts) + 1)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    body = np.ones(len(out), bool)
    body[starts], body[ends - 1] = False, False
    out[body], out[starts], out[ends - 1] = ids, tokenizer_file.bos_id, tokenizer_file.eos_id
    return out, np.concatenate([[0], ends]).astype(np.int64)


def encode_documents(tokenizer_file: TokenizerFile, texts: list[str]) -> list[np.ndarray]:
    """<|bos|> ids <|eos|> of each text, as uint32 arrays."""
    tokens, offsets = encode_flat(tokenizer_file, texts)
    return np.split(tokens, offsets[1:-1])
