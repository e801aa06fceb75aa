"""The compiled encoder against `tokenizers` itself: the same ids for every document of the sample and
for tens of thousands of hostile strings, for the hybrid (Unigram), the BPE and the superword hybrid."""

import numpy as np
import pyarrow as pa
import pytest

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.base import from_json
from prep.tokenizer.encoder import Encoder, UnsupportedTokenizer
from tests.fuzz_text import fuzz_strings, hostile_strings


@pytest.fixture(scope="module")
def sample_texts(sample_dir) -> list[str]:
    return [r.text for f in expand_inputs(str(sample_dir)) for r in read_file(f) if isinstance(r, Document)]


@pytest.fixture(scope="module", params=["hybrid", "bpe", "superwords"])
def tokenizer_json(request, trained_on_sample) -> str:
    """Trained on the sample's training part: the held-out part's documents are new to it."""
    return trained_on_sample(request.param)[0].to_str()


def assert_same_ids(tokenizer_json: str, texts: list[str]) -> None:
    ids, offsets = Encoder(tokenizer_json).encode_batch(texts)
    expected = from_json(tokenizer_json).encode_batch(texts, add_special_tokens=False)
    assert ids.dtype == np.int32 and len(offsets) == len(texts) + 1
    for i, encoding in enumerate(expected):
        assert ids[offsets[i]:offsets[i + 1]].tolist() == encoding.ids, repr(texts[i][:200])


def test_every_sample_document_gets_the_ids_tokenizers_gives(tokenizer_json, sample_texts):
    assert_same_ids(tokenizer_json, sample_texts)


def test_hostile_strings_get_the_ids_tokenizers_gives(tokenizer_json):
    assert_same_ids(tokenizer_json, hostile_strings(30_000) + list(fuzz_strings()) + ["", " ", "\n"])


def test_a_tokenizer_of_another_shape_is_refused():
    from tokenizers import Tokenizer, models, pre_tokenizers

    other = Tokenizer(models.BPE())
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(UnsupportedTokenizer, match="pre-tokenizer"):
        Encoder(other.to_str())


def test_an_arrow_column_gets_the_same_ids_as_python_strings(tokenizer_json, sample_texts):
    texts = sample_texts[::7] + hostile_strings(1_000)
    encoder = Encoder(tokenizer_json)
    ids, offsets = encoder.encode_batch(texts)
    arrow_ids, arrow_offsets = encoder.encode_batch(pa.array(texts))
    assert np.array_equal(arrow_ids, ids) and np.array_equal(arrow_offsets, offsets)


def without_byte(tokenizer_json: str, byte: str) -> str:
    """The tokenizer with every piece that holds `byte` (a ByteLevel symbol) removed, and the merges using them."""
    import json

    config = json.loads(tokenizer_json)
    model = config["model"]
    if model["type"] == "Unigram":
        model["vocab"] = [[piece, score] for piece, score in model["vocab"] if byte not in piece]
    else:
        merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
        model["merges"] = [m for m in merges if byte not in "".join(m)]
        kept = [piece for piece in model["vocab"] if byte not in piece]
        model["vocab"] = {piece: i for i, piece in enumerate(kept)}
        config["added_tokens"] = [dict(t, id=model["vocab"][t["content"]]) for t in config["added_tokens"]]
    return json.dumps(config)


@pytest.mark.parametrize("algorithm", ["hybrid", "bpe"])
def test_a_byte_no_piece_covers_is_refused_naming_it_instead_of_inventing_ids(trained_on_sample, algorithm):
    from prep.tokenizer.encoder import UnencodableText

    tokenizer, _ = trained_on_sample(algorithm)
    damaged = without_byte(tokenizer.to_str(), "~")
    texts = ["a clean document", "home is ~/.bashrc"]
    if algorithm == "hybrid":  # what `tokenizers` itself does with such a Unigram vocabulary
        with pytest.raises(Exception, match="unk"):
            from_json(damaged).encode_batch(texts, add_special_tokens=False)
    encoder = Encoder(damaged)
    with pytest.raises(UnencodableText, match=r"byte 0x7e of document 1 of the batch \('home is ~/.bashrc'"):
        encoder.encode_batch(texts)
    assert encoder.encode_batch(texts[:1])[0].size > 0  # the text it covers still encodes


def _small_unigram(extra: list[tuple[str, float]]) -> str:
    """A tokenmill Unigram of the 256 bytes (and `extra` pieces), without training."""
    from prep.tokenizer.pretokenize import byte_alphabet
    from prep.tokenizer.unigram import unigram_tokenizer

    pieces = byte_alphabet() + [p for p, _ in extra]
    return unigram_tokenizer(pieces, [-10.0] * 256 + [s for _, s in extra], 512).to_str()


def test_a_unigram_piece_not_spelled_in_byte_symbols_is_never_matched_as_by_tokenizers():
    # "中文" as written (not in byte symbols) was matched by the compiled encoder only: `tokenizers` compares
    # pieces with the pre-token's byte symbols, so ids differed from the reference
    from prep.tokenizer.pretokenize import to_symbols

    tokenizer_json = _small_unigram([("中文", 0.0), (to_symbols("文本"), -1.0)])
    assert_same_ids(tokenizer_json, ["中文", "a 中文文本 b", "文本"])


def test_the_trie_of_long_pieces_takes_memory_linear_in_their_bytes():
    # 3,000 pieces of 1,000 bytes (a 3 MB file) took 2.6 GB: the trie was built keyed by every prefix's bytes
    import random
    import tracemalloc

    from prep.tokenizer.encoder import unigram_trie

    r = random.Random(0)
    pieces = [("".join(r.choice("abcdefghij") for _ in range(1000)), -20.0) for _ in range(300)]
    unigram_trie([("ab", -1.0)])  # compiles the hash table's kernel, which allocates too
    tracemalloc.start()
    model = unigram_trie(pieces)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(model.token) <= 300 * 1000 + 1 and model.longest == 1000
    assert peak < 200 * 300 * 1000  # bytes per node (about 120: the hash table, arrays and their copies);
    # the prefixes alone were 150 MB
