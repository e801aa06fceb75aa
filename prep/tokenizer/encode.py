"""Encoding documents: for shards, <|bos|> tokens <|eos|> as uint32 arrays; for reports, flat ids.

A tokenizer is loaded once per process (Spark reuses its Python workers across tasks), keyed by its
SHA-256, and encodes a batch of documents per call: no Python object per token.
"""

import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from tokenizers import Tokenizer

from prep.panics import is_panic
from prep.tokenizer.base import BOS, EOS, MAX_PIECE_BYTES, PAD, from_json, special_tokens
from prep.tokenizer.encoder import Encoder, UnsupportedTokenizer
from prep.tokenizer.file_checks import check_tokenizer
from schemas.index import MAX_VOCAB_SIZE
from schemas.trust import UntrustedPath, keys_once, open_regular_file

_LOADED: dict[str, "BatchEncoder"] = {}
# Files read and checked, by their text's sha256 (a job reads its tokenizer in its check and again for each
# shards part: 1-2 s each for 131,072 pieces); the last two, each holding its text (a job encodes with one)
_CHECKED: dict[str, "TokenizerFile"] = {}
CHECKED_KEPT = 2
MAX_TOKENIZER_BYTES = 1 << 28  # a tokenizer.json (tokenmill's of 131,072 pieces: ~5 MB; 256K-piece ones ~30 MB)
MERGES_PER_PIECE = 4  # a BPE's merges at most, per piece (Llama 3's converted file has 2.2)
# the special tokens' spellings as a document may hold them: alone, after a space, inside words, twice, on a line
PROBE_FORMS = ("{0}", " {0}", "a{0}b", "word {0} word", "{0}{0}", "\n{0}\n", "x {0}.")
# All pieces together, in characters (a byte symbol is one): the `tokenizers` Unigram model holds a trie
# node per character (some 350 bytes each), the compiled encoder another (120 at its peak), in every worker.
# A BPE of 131,072 pieces trained on the sample holds 1.5 M (more than a larger corpus gives at that size);
# this is 131,072 pieces all at the 32-byte superword limit.
MAX_PIECES_CHARACTERS = 1 << 22


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
        """The tokenizer in `path`, a file from elsewhere (beside shards, named by a config): ValueError naming
        it where it is not a regular file of at most MAX_TOKENIZER_BYTES, or not one tokenmill encodes with
        (from_text)."""
        try:
            with open_regular_file(path) as f:
                data = f.read(MAX_TOKENIZER_BYTES + 1)
        except UntrustedPath as e:
            raise ValueError(f"{path}: {e}") from None
        if len(data) > MAX_TOKENIZER_BYTES:
            raise ValueError(f"{path}: over {MAX_TOKENIZER_BYTES} bytes, not a tokenizer tokenmill reads")
        try:
            # the newlines a text-mode read gave, so that its hash is the one shards already name
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except ValueError as e:
            raise ValueError(f"{path}: not a tokenizers file: {e}") from None
        return cls.from_text(text, path)

    @classmethod
    def from_text(cls, text: str, path: str) -> "TokenizerFile":
        """The tokenizer of a tokenizer.json's text (`path` names it in errors): ValueError where it is not a
        tokenizers file, its pieces or merges are not within bounds (_check_pieces), it is not fit to encode
        documents with (prep/tokenizer/file_checks.py), or its encoder fails or gives a special id for text
        (_probe). The same text read again in a process is the file already checked."""
        sha256 = hashlib.sha256(text.encode()).hexdigest()
        if (checked := _CHECKED.get(sha256)) is not None:
            return checked
        try:
            # a key given twice (two "model"s): this reader and the library's could take different ones
            config = json.loads(text, object_pairs_hook=keys_once)
        except (ValueError, RecursionError) as e:
            raise ValueError(f"{path}: not a tokenizers file: {e}") from None
        # before the library builds its own trie of them (a 3 MB file of long pieces: 1 GB)
        if (total := _piece_characters(config)) > MAX_PIECES_CHARACTERS:
            raise ValueError(f"{path}: pieces of {total} characters together (at most {MAX_PIECES_CHARACTERS})")
        if problem := _merges_problem(config):
            raise ValueError(f"{path}: {problem}")
        try:
            tokenizer = Tokenizer.from_str(text)
        except BaseException as e:  # the Rust side raises plain Exceptions, and panics (a bad Precompiled map)
            if not (isinstance(e, Exception) or is_panic(e)):
                raise
            why = f"the library failed reading it ({e})" if is_panic(e) else str(e)
            raise ValueError(f"{path}: not a tokenizers file: {why}") from None
        vocab_size = _check_pieces(tokenizer.get_vocab(with_added_tokens=True), path)
        ids = {t: tokenizer.token_to_id(t) for t in (BOS, EOS, PAD)}
        if None in ids.values():
            raise ValueError(f"{path}: the tokenizer lacks {', '.join(t for t, i in ids.items() if i is None)}")
        read = json.loads(tokenizer.to_str())  # as the library reads it
        check_tokenizer(read, path)
        found = cls(text, sha256, vocab_size, ids[BOS], ids[EOS], ids[PAD])
        found._probe(tokenizer, _unknown_id(tokenizer, read["model"]), path, read)
        while len(_CHECKED) >= CHECKED_KEPT:
            del _CHECKED[next(iter(_CHECKED))]
        _CHECKED[sha256] = found
        return found

    def _probe(self, tokenizer: Tokenizer, unknown: int | None, path: str, read: dict) -> None:
        """Encodes the special tokens' spellings, in the contexts a pre-tokenizer may keep them whole, with the
        encoder the shards job will use: a ValueError where it fails (a FixedLength pre-tokenizer of length 0
        panicked in every Spark task) or gives a special id for text (a model whose pieces spell "<|eos|>" put
        the eos id inside a document quoting it)."""
        specials = {tokenizer.token_to_id(t) for t in special_tokens()} | {self.bos_id, self.eos_id, self.pad_id}
        specials |= {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special}
        specials -= {None, unknown}  # a word outside a WordPiece's vocabulary is its [UNK], a special token
        texts = [form.format(s) for s in (BOS, EOS, PAD, special_tokens()[-1]) for form in PROBE_FORMS]
        try:
            ids, _ = batch_encoder(self.json, self.sha256, read)(texts)
        except BaseException as e:
            if not (isinstance(e, Exception) or is_panic(e)):
                raise
            why = f"the library panicked: {e}" if is_panic(e) else f"{type(e).__name__}: {e}"
            raise ValueError(f"{path}: its encoder fails on a few words of text ({why})") from None
        if found := sorted(specials.intersection(ids.tolist())):
            raise ValueError(f"{path}: the text of a special token encodes to its id ({found[0]}): a document "
                             "quoting it would hold a special token (its model's pieces spell it)")

    def encoder(self) -> "BatchEncoder":
        return batch_encoder(self.json, self.sha256)


def _check_pieces(vocab: dict[str, int], path: str) -> int:
    """The vocabulary's size (its largest id + 1), after checking that no two pieces share an id (which one an
    id decoded to changed from run to run), every id is below MAX_VOCAB_SIZE (the library writes a vocabulary
    out id by id, gaps too: a 4.8 KB file with an id of 4e9 took 15.7 GB), no piece is over MAX_PIECE_BYTES
    (a 4,000-byte piece made a 400,000-letter document take 15 s to encode); their total is bounded before
    the library reads them (MAX_PIECES_CHARACTERS)."""
    ids = np.fromiter(vocab.values(), np.int64, len(vocab))
    if not len(ids):
        raise ValueError(f"{path}: a tokenizer without pieces")
    if ids.min() < 0 or ids.max() >= MAX_VOCAB_SIZE:
        raise ValueError(f"{path}: an id past {MAX_VOCAB_SIZE - 1} ({ids.max()}), or below 0")
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{path}: id {unique[counts > 1][0]} is given to two pieces")
    if (long := next((piece for piece in vocab if len(piece.encode()) > MAX_PIECE_BYTES), None)) is not None:
        raise ValueError(f"{path}: a piece of {len(long.encode())} bytes ({long[:20]!r}...; at most "
                         f"{MAX_PIECE_BYTES})")
    return int(ids.max()) + 1


def _unknown_id(tokenizer: Tokenizer, model: dict) -> int | None:
    """The id of the model's unknown token, if it has one."""
    if model.get("type") == "Unigram":
        return model.get("unk_id")
    return tokenizer.token_to_id(model["unk_token"]) if isinstance(model.get("unk_token"), str) else None


def _merges_problem(config) -> str | None:
    """A merge given twice, or merges past MERGES_PER_PIECE times the pieces: 4 M repeated merges in 64 MB took
    3 GB to read. (A file converted from tiktoken or SentencePiece lists several merges that make one piece:
    Llama 3's 280,147 for 128,000 pieces, Llama 2's 58,980 for 32,000.)"""
    model = config.get("model") if isinstance(config, dict) else None
    merges = model.get("merges") if isinstance(model, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if not isinstance(merges, list):
        return None
    pieces = len(vocab) if isinstance(vocab, dict | list) else 0
    if len(merges) > MERGES_PER_PIECE * max(pieces, 1):
        return f"{len(merges)} merges for {pieces} pieces (at most {MERGES_PER_PIECE} a piece)"
    keys = [_merge_key(m) for m in merges]
    if len(set(keys) - {None}) < sum(k is not None for k in keys):
        return "a merge given twice"
    return None


def _merge_key(merge) -> str | tuple | None:
    """A merge as the library takes one ("a b" or ["a", "b"]); None for anything else (the library refuses it)."""
    if isinstance(merge, str):
        return merge
    return tuple(merge) if isinstance(merge, list) and all(isinstance(p, str) for p in merge) else None


def _piece_characters(config) -> int:
    """The characters of the model's pieces and the added tokens together, from the file's JSON as it is."""
    model = config.get("model") if isinstance(config, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, list):  # a Unigram's [piece, score] pairs
        vocab = [entry[0] for entry in vocab if isinstance(entry, list) and entry]
    added = config.get("added_tokens") if isinstance(config, dict) else None
    contents = [t.get("content") for t in added if isinstance(t, dict)] if isinstance(added, list) else []
    return sum(len(p) for p in [*(vocab or ()), *contents] if isinstance(p, str))


# texts (a list or an Arrow string array) → (int32 ids of every text one after another, int64 offsets
# [len(texts) + 1])
BatchEncoder = Callable[["list[str] | pa.StringArray"], tuple[np.ndarray, np.ndarray]]


def batch_encoder(tokenizer_json: str, sha256: str | None = None, config: dict | None = None) -> BatchEncoder:
    """The encoder of a tokenizer, made once per process: tokenmill's compiled one (prep/tokenizer/
    encoder.py: the same ids, several times faster) for the tokenizers tokenmill trains, the `tokenizers`
    library for any other. Special tokens' spellings are text either way. `config`: the file as the library
    reads it, where the caller has it."""
    key = sha256 or hashlib.sha256(tokenizer_json.encode()).hexdigest()
    if key not in _LOADED:
        try:
            _LOADED[key] = Encoder(tokenizer_json, config).encode_batch
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
