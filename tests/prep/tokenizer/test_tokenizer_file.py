"""A tokenizer.json from elsewhere (beside shards, named by a config) is read within bounds: its ids are each
one piece's, below MAX_VOCAB_SIZE, its pieces short, the file of a bounded size and a regular file."""

import json
import os

import pytest
from tokenizers import models

from prep.tokenizer import encode
from prep.tokenizer.base import BOS, EOS, PAD, new_tokenizer
from prep.tokenizer.encode import TokenizerFile, encode_documents
from prep.tokenizer.pretokenize import byte_alphabet
from tests.conftest import within


def _bpe(tmp_path, change=None):
    vocab = {s: i for i, s in enumerate(byte_alphabet())}
    vocab.update({BOS: 256, EOS: 257, "ab": 258, PAD: 259})
    config = json.loads(new_tokenizer(models.BPE(vocab, [("a", "b")])).to_str())
    if change:
        change(config)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_a_tokenizer_of_tokenmill_s_shape_is_read_and_encodes(tmp_path):
    file = TokenizerFile.read(_bpe(tmp_path))
    assert (file.vocab_size, file.bos_id, file.eos_id, file.pad_id) == (260, 256, 257, 259)
    assert encode_documents(file, ["abc"])[0].tolist() == [256, 258, byte_alphabet().index("c"), 257]


def test_an_id_far_past_the_pieces_or_given_twice_is_refused(tmp_path):
    # a 4.8 KB file with one id of 4,000,000,000: the encoder's copy of it took 37 s and 15.7 GB (the library
    # writes a vocabulary out id by id, gaps too), and its vocab_size read 260 against ids of 4e9; two pieces
    # of one id decoded one as the other, or failed with a bare KeyError, by the run
    def far(config):
        config["model"]["vocab"]["ab"] = 4_000_000_000

    def twice(config):
        config["model"]["vocab"]["ab"] = 5

    with pytest.raises(ValueError, match="past"):
        TokenizerFile.read(_bpe(tmp_path, far))
    with pytest.raises(ValueError, match="id 5"):
        TokenizerFile.read(_bpe(tmp_path, twice))


def test_a_piece_past_the_bound_is_refused(tmp_path):
    # a piece of 40 KB cost the compiled encoder 820 MB (a trie node per prefix), and a 4,000-byte one made a
    # 400,000-letter document take 15 s to encode
    def long(config):
        config["model"]["vocab"]["a" * 40_000] = 260

    with pytest.raises(ValueError, match="bytes"):
        TokenizerFile.read(_bpe(tmp_path, long))


def test_a_file_too_large_or_not_a_regular_file_is_refused(tmp_path, monkeypatch):
    path = _bpe(tmp_path)
    monkeypatch.setattr(encode, "MAX_TOKENIZER_BYTES", os.path.getsize(path) - 1)
    with pytest.raises(ValueError, match="over"):
        TokenizerFile.read(path)
    monkeypatch.undo()
    os.mkfifo(tmp_path / "fifo.json")
    with within(10), pytest.raises(ValueError, match="regular file"):
        TokenizerFile.read(str(tmp_path / "fifo.json"))
