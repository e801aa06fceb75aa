"""A tokenizer.json from elsewhere (beside shards, named by a config) is read within bounds: its ids are each
one piece's, below MAX_VOCAB_SIZE, its pieces short, the file of a bounded size and a regular file."""

import json
import os

import pytest
from tokenizers import AddedToken, Tokenizer, models

from prep.tokenizer import encode
from prep.tokenizer.base import BOS, EOS, PAD, new_tokenizer
from prep.tokenizer.encode import TokenizerFile, encode_documents
from prep.tokenizer.pretokenize import byte_alphabet
from tests.conftest import within


def _bpe(tmp_path, change=None):
    vocab = {s: i for i, s in enumerate(byte_alphabet())}
    vocab.update({BOS: 256, EOS: 257, "ab": 258, PAD: 259})
    tokenizer = new_tokenizer(models.BPE(vocab, [("a", "b")]))
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in (BOS, EOS, PAD)])
    config = json.loads(tokenizer.to_str())
    if change:
        change(config)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_a_tokenizer_of_tokenmill_s_shape_is_read_and_encodes(tmp_path):
    file = TokenizerFile.read(_bpe(tmp_path))
    assert (file.vocab_size, file.bos_id, file.eos_id, file.pad_id) == (260, 256, 257, 259)
    assert encode_documents(file, ["abc"])[0].tolist() == [256, 258, byte_alphabet().index("c"), 257]


def test_the_same_text_read_again_is_the_file_already_checked_and_another_is_read_anew(tmp_path, monkeypatch):
    # a job read its tokenizer in its check and again for each shards part, 2-3 s each for 131,072 pieces
    first = TokenizerFile.read(_bpe(tmp_path))
    parsed = []
    monkeypatch.setattr(encode.Tokenizer, "from_str", lambda text, real=Tokenizer.from_str: parsed.append(1) or
                        real(text))
    assert TokenizerFile.read(_bpe(tmp_path)) is first and not parsed

    def other(config):
        config["model"]["vocab"]["ba"] = config["model"]["vocab"].pop("ab")
        config["model"]["merges"] = [["b", "a"]]

    assert TokenizerFile.read(_bpe(tmp_path, other)).sha256 != first.sha256 and parsed
    for _ in range(2):  # a refusal is no file checked: it is refused each time
        with pytest.raises(ValueError, match="BPE dropout"):
            TokenizerFile.read(_bpe(tmp_path, lambda config: config["model"].update(dropout=0.5)))


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


def test_pieces_whose_bytes_together_pass_the_bound_are_refused(tmp_path, monkeypatch):
    # 3,000 pieces of 1,000 bytes (a 3 MB file) cost the compiled encoder 2.6 GB and 11.6 s per worker, each
    # piece under the bound on one piece: the file's cap of 256 MB allowed some 200 GB
    def many(config):
        config["model"]["vocab"].update({f"{i:04d}" + "a" * 996: 260 + i for i in range(20)})

    monkeypatch.setattr(encode, "MAX_PIECES_CHARACTERS", 10_000)
    with pytest.raises(ValueError, match="tokenizer.json: pieces of 20.* characters together"):
        TokenizerFile.read(_bpe(tmp_path, many))


def _fallback_shaped(config):
    config["normalizer"] = {"type": "NFC"}  # not tokenmill's shape: encoded by `tokenizers`, not the compiled encoder


def test_truncation_and_padding_in_the_file_are_switched_off(tmp_path):
    # a file saved with truncation to 3 tokens cut every document to 3 tokens; one with padding to 64 put pad ids
    # inside every document
    def truncating(config):
        _fallback_shaped(config)
        config["truncation"] = {"direction": "Right", "max_length": 3, "strategy": "LongestFirst", "stride": 0}

    def padding(config):
        _fallback_shaped(config)
        config["padding"] = {"strategy": {"Fixed": 64}, "direction": "Right", "pad_to_multiple_of": None,
                             "pad_id": 259, "pad_type_id": 0, "pad_token": PAD}

    text = "abc abc abc abc abc"
    whole = encode_documents(TokenizerFile.read(_bpe(tmp_path, _fallback_shaped)), [text])[0].tolist()
    assert len(whole) > 5 and 259 not in whole
    for change in (truncating, padding):
        assert encode_documents(TokenizerFile.read(_bpe(tmp_path, change)), [text])[0].tolist() == whole


def test_a_byte_without_a_piece_unknown_token_or_byte_fallback_is_refused_at_read(tmp_path):
    # the shards job read such a file, then failed in a Spark task on the first emoji (byte 0xf0): a traceback
    # and a staging folder left behind
    def without_f0(config):
        config["model"]["vocab"]["QQQ"] = config["model"]["vocab"].pop(byte_alphabet()[0xF0])

    def with_unknown_token(config):
        without_f0(config)
        config["model"]["unk_token"] = "QQQ"

    with pytest.raises(ValueError, match="tokenizer.json: byte 0xf0 has no piece"):
        TokenizerFile.read(_bpe(tmp_path, without_f0))
    assert TokenizerFile.read(_bpe(tmp_path, with_unknown_token)).vocab_size == 260


@pytest.mark.parametrize("where", ["normalizer", "pre_tokenizer"])
def test_a_regular_expression_tokenmill_does_not_write_is_refused(tmp_path, where):
    # a normalizer replacing "(a+)+$" made `tokenizers` panic (a PanicException, past `except Exception`)
    # on a document of a's; the regex engine backtracks
    def crafted(config):
        pattern = {"type": "Replace", "pattern": {"Regex": "(a+)+$"}, "content": "c"}
        if where == "normalizer":
            config["normalizer"] = pattern
        else:
            config["pre_tokenizer"]["pretokenizers"][2]["pattern"] = {"Regex": "(a+)+$"}

    with pytest.raises(ValueError, match=r"tokenizer.json: a regular expression tokenmill does not write"):
        TokenizerFile.read(_bpe(tmp_path, crafted))


SPACE_BY_16 = {"type": "Replace", "pattern": {"String": " "}, "content": " " * 16}


@pytest.mark.parametrize("inserts, refused", [
    ([{"type": "Prepend", "prepend": "x" * 100_000}], "Prepends and Replaces that put 100,000 characters"),
    ([{"type": "Replace", "pattern": {"String": " "}, "content": "x" * 10_000}], "Prepends and Replaces that put "
                                                                                  "10,000 characters"),
    ([{"type": "Prepend", "prepend": "x" * 16}] * 6_250, "Prepends and Replaces that put 100,000 characters"),
    ([SPACE_BY_16] * 5, "Prepends and Replaces that put 80 characters"),
    ([dict(SPACE_BY_16, content="  ")] * 5, "5 Replaces that lengthen the text .at most one")])
def test_a_normalizer_that_puts_much_in_the_text_is_refused(tmp_path, inserts, refused):
    # a Prepend of 100,000 characters was read (in 5 s; a million took 55 s) and put in every document: "hello
    # world" became 36,112 tokens; a Replace of every space by 10,000 characters, 5 words 20,007 tokens; and
    # bounded one by one (the diff review), 6,250 Prepends of 16 characters gave 100,013 tokens and five
    # chained Replaces of a space by 16 spaces 1,048,588
    def crafted(config):
        config["normalizer"] = {"type": "Sequence", "normalizers": inserts}

    def llama(config):  # Llama 2's and Mistral's: "▁" before the text and for each space
        config["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}

    with pytest.raises(ValueError, match=f"tokenizer.json: {refused}"):
        TokenizerFile.read(_bpe(tmp_path, crafted))
    assert TokenizerFile.read(_bpe(tmp_path, llama)).encoder()(["hello world"])[0].size > 0


def test_a_tokenizer_of_the_cjk_ranges_before_they_were_defined_once_is_read(tmp_path):
    """Found by the day's review: tokenizers tokenmill wrote before 2026-11-29 hold another text of the CJK
    runs' pattern, and were refused as foreign."""
    from prep.tokenizer.file_checks import CJK_RUN_BEFORE_2026_11_29

    def older(config):
        config["pre_tokenizer"]["pretokenizers"][1]["pattern"] = {"Regex": CJK_RUN_BEFORE_2026_11_29}

    assert TokenizerFile.read(_bpe(tmp_path, older)).encoder()(["中文 text"])[0].size > 0


def test_added_tokens_that_are_not_special_are_refused(tmp_path):
    # with "special": false the text "<|eos|>" inside a document became the eos id: the document ended there
    def not_special(config):
        for token in config["added_tokens"]:
            token["special"] = False

    def not_added(config):
        config["added_tokens"] = [t for t in config["added_tokens"] if t["content"] != EOS]

    with pytest.raises(ValueError, match=r"tokenizer.json: added token '<\|bos\|>' is not special"):
        TokenizerFile.read(_bpe(tmp_path, not_special))
    with pytest.raises(ValueError, match=r"tokenizer.json: <\|eos\|> is not a special added token"):
        TokenizerFile.read(_bpe(tmp_path, not_added))


def _saved(tmp_path, tokenizer) -> str:
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in (BOS, EOS, PAD)])
    path = tmp_path / "tokenizer.json"
    path.write_text(tokenizer.to_str())
    return str(path)


def test_a_model_whose_pieces_spell_a_special_token_is_refused(tmp_path):
    """Found by the review of 2026-12-07: a BPE whose merges spell "<|eos|>" into its eos piece (under the
    superword pre-tokenizer, which keeps it whole) put the eos id inside a document quoting it."""
    vocab = {s: i for i, s in enumerate(byte_alphabet())}
    vocab.update({BOS: 256, EOS: 257, PAD: 258})
    chain = ["<|", "<|e", "<|eo", "<|eos", "<|eos|"]
    vocab.update({piece: 259 + i for i, piece in enumerate(chain)})
    merges = list(zip(["<", *chain], ["|", "e", "o", "s", "|", ">"]))
    with pytest.raises(ValueError, match="encodes to its id \\(257\\)"):
        TokenizerFile.read(_saved(tmp_path, new_tokenizer(models.BPE(vocab, merges), superwords=True)))
    assert TokenizerFile.read(_saved(tmp_path, new_tokenizer(models.BPE(vocab, merges[:-1]), superwords=True)))


def test_a_file_the_library_panics_on_is_one_error_naming_it(tmp_path):
    """Found by the review of 2026-12-07: a Precompiled normalizer of a bad map panicked in the library (a
    PanicException is no Exception: a traceback), and a FixedLength pre-tokenizer of length 0 passed every check
    and panicked in every Spark task."""
    def precompiled(config):
        config["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": "AAAAAP////8="}

    def fixed(config):
        config["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "FixedLength", "length": 0},
                                                                         config["pre_tokenizer"]]}

    with pytest.raises(ValueError, match="tokenizer.json: not a tokenizers file: the library failed"):
        TokenizerFile.read(_bpe(tmp_path, precompiled))
    with pytest.raises(ValueError, match="tokenizer.json: its encoder fails on a few words of text"):
        TokenizerFile.read(_bpe(tmp_path, fixed))


def test_merges_past_the_pieces_and_wordpiece_words_past_the_bound_are_refused(tmp_path):
    """Found by the review of 2026-12-07: 4 M repeated merges in 64 MB took 3 GB to read (a file converted from
    tiktoken has up to 2.2 merges a piece: several make one piece, and are read); a WordPiece of words
    up to 1e12 characters with no pre-tokenizer took 128 s to encode 16,000 letters (its search is cubic)."""
    def repeated(times: int):
        def change(config):
            config["model"]["merges"] = config["model"]["merges"] * times
        return change

    with pytest.raises(ValueError, match="2000 merges for 260 pieces"):
        TokenizerFile.read(_bpe(tmp_path, repeated(2_000)))
    with pytest.raises(ValueError, match="a merge given twice"):
        TokenizerFile.read(_bpe(tmp_path, repeated(2)))
    vocab = {"[UNK]": 0, **{c: 1 + i for i, c in enumerate("abcdefgh")}}  # the specials added: ids 9, 10, 11
    for longest, read in ((10**12, False), (100, True)):
        path = _saved(tmp_path, Tokenizer(models.WordPiece(vocab, unk_token="[UNK]",
                                                           max_input_chars_per_word=longest)))
        if read:
            assert TokenizerFile.read(path).eos_id == 10
        else:
            with pytest.raises(ValueError, match="WordPiece of words up to"):
                TokenizerFile.read(path)
