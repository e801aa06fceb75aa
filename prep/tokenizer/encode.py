"""Encoding documents for shards: <|bos|> tokens <|eos|>, as uint32 arrays.

The tokenizer is parsed once per process (Spark reuses its Python workers across tasks), keyed by its
SHA-256, and encodes a batch of documents per call: no per-row Python beyond reading the ids.
"""

import hashlib
import os
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

from prep.tokenizer.base import BOS, EOS, PAD, from_json

_LOADED: dict[str, Tokenizer] = {}


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

    def load(self) -> Tokenizer:
        if self.sha256 not in _LOADED:
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one task per core already
            _LOADED[self.sha256] = from_json(self.json)  # the text "<|eos|>" in a document stays text
        return _LOADED[self.sha256]


def encode_documents(tokenizer_file: TokenizerFile, texts: list[str]) -> list[np.ndarray]:
    encodings = tokenizer_file.load().encode_batch(texts, add_special_tokens=False)
    bos, eos = tokenizer_file.bos_id, tokenizer_file.eos_id
    return [np.array([bos, *e.ids, eos], dtype=np.uint32) for e in encodings]
