"""The cleaning transform: normalize, identify the language, redact PII, apply the quality rules.

Over one document (`clean_text`) or many (`clean_texts`, a step at a time), plus the Arrow batch
function the Spark job calls from mapInArrow: `clean_batch` (READ_SCHEMA, prep/ingest/records.py,
to CLEAN_RESULT_SCHEMA).
"""

import json
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa

from prep.arrow_rows import rows_to_batch
from prep.classify.scoring import ClassifierConfig, Classifiers
from prep.ingest.readers import ReaderConfig
from prep.ingest.records import READ_SCHEMA
from prep.langid import LanguageConfig, identify_each, is_char_based
from prep.normalize import NormalizeConfig, normalize
from prep.pii import PiiConfig, redact
from prep.quality.c4 import C4Config, c4
from prep.quality.fineweb import FineWebConfig, fineweb
from prep.quality.gopher_quality import GopherQualityConfig, gopher_quality
from prep.quality.gopher_repetition import GopherRepetitionConfig, gopher_repetition
from prep.quality.profiles import PROFILES, profile_settings
from prep.quality.url_filter import UrlFilter, UrlFilterConfig
from prep.quality.word_diversity import WordDiversityConfig, word_diversity
from schemas import DOCUMENT_SCHEMA, REJECTED_SCHEMA

# FineWeb-2's thresholds for Mandarin (configs/cmn_Hani.yml), where each Han character is a word.
CHINESE_STOP_WORDS = ("的", "年", "在", "月", "是", "和", "日", "了", "於", "·", "為", "有", "被", "人",
                      "中", "为", "他", "與", "後", "也", "而", "由")


@dataclass
class LanguageRules:
    gopher_repetition: GopherRepetitionConfig = field(default_factory=GopherRepetitionConfig)
    gopher_quality: GopherQualityConfig = field(default_factory=GopherQualityConfig)
    c4: C4Config = field(default_factory=C4Config)
    fineweb: FineWebConfig = field(default_factory=FineWebConfig)
    word_diversity: WordDiversityConfig = field(default_factory=WordDiversityConfig)


def chinese_rules() -> LanguageRules:
    return LanguageRules(
        gopher_repetition=GopherRepetitionConfig(
            dup_line_frac=0.287,
            top_n_grams=[(2, 0.256), (3, 0.201), (4, 0.171)],
            dup_n_grams=[(5, 0.198), (6, 0.182), (7, 0.167), (8, 0.154), (9, 0.14), (10, 0.127)],
        ),
        gopher_quality=GopherQualityConfig(min_avg_word_length=1, max_avg_word_length=5,
                                           max_non_alpha_words_ratio=0.735, stop_words=CHINESE_STOP_WORDS),
        fineweb=FineWebConfig(line_punct_thr=0.106, new_line_ratio=0.178),
        # Chinese text draws on a few thousand characters, so a window repeats more of them.
        word_diversity=WordDiversityConfig(min_distinct_ratio=0.05),
    )


def other_rules() -> LanguageRules:
    # The stop-word check needs a list per language; without one it would reject every non-English text.
    return LanguageRules(gopher_quality=GopherQualityConfig(stop_words=()))


@dataclass
class CleanConfig:
    # The rules' base settings for a kind of text: web (crawls), docs (manuals, references), code
    # (prep/quality/profiles.py); what is set besides wins over the profile.
    profile: str = "web"
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    language: LanguageConfig = field(default_factory=LanguageConfig)
    pii: PiiConfig = field(default_factory=PiiConfig)
    url_filter: UrlFilterConfig = field(default_factory=UrlFilterConfig)  # blocked sites, pages and words in URLs
    en: LanguageRules = field(default_factory=LanguageRules)  # English: the published thresholds
    zh: LanguageRules = field(default_factory=chinese_rules)  # Chinese: character-based, FineWeb-2's
    other: LanguageRules = field(default_factory=other_rules)  # every other language
    # NAME: {model: PATH, label: LABEL, ...}: score_NAME on every document, and rules on it (prep/classify/scoring.py)
    classifiers: dict[str, ClassifierConfig] = field(default_factory=dict)

    # prep/config.py applies a profile's settings before the rest of a mapping that names it
    PROFILES: ClassVar = staticmethod(lambda name: profile_settings(name, CleanConfig()))

    def __post_init__(self):
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {self.profile!r}")

    def rules_for(self, lang: str) -> LanguageRules:
        return {"en": self.en, "zh": self.zh}.get(lang, self.other)


@dataclass
class Cleaned:
    text: str
    lang: str
    lang_score: float
    reason: str | None  # None when kept


def clean_text(text: str, cfg: CleanConfig) -> Cleaned:
    (cleaned,) = clean_texts([text], cfg)
    if isinstance(cleaned, Exception):
        raise cleaned
    return cleaned


def clean_texts(texts: list[str], cfg: CleanConfig) -> list[Cleaned | Exception]:
    """clean_text of each text, a step at a time over all of them (normalization, language, the
    rest), so that the language model's tables stay in the processor's cache (a quarter of the time
    otherwise). A text that makes a step raise gets the exception in its place."""
    normalized = [_tried(normalize, text, cfg.normalize) for text in texts]
    asked = [i for i, text in enumerate(normalized) if isinstance(text, str) and text]
    languages = dict(zip(asked, identify_each([normalized[i] for i in asked], cfg.language)))
    results = []
    for i, text in enumerate(normalized):
        if isinstance(text, Exception) or isinstance(languages.get(i), Exception):
            results.append(text if isinstance(text, Exception) else languages[i])
        elif not text:
            results.append(Cleaned(text, "other", 0.0, "normalize:empty"))
        else:
            results.append(_tried(_apply_rules, text, *languages[i], cfg))
    return results


def _tried(step, *args):
    try:
        return step(*args)
    except Exception as e:  # a step that breaks on some text must not take the others down with it
        return e


def _apply_rules(text: str, lang: str, score: float, cfg: CleanConfig) -> Cleaned:
    text = redact(text, cfg.pii)
    char_based = lang == "zh" or is_char_based(text, cfg.language)
    # Mostly-Han text gets the character-based rules whatever the detector says: a Chinese page full
    # of English commands is often labelled "en", and word rules cannot read Chinese.
    rules = cfg.zh if char_based else cfg.rules_for(lang)
    if rules.gopher_repetition.enabled and (failed := gopher_repetition(text, rules.gopher_repetition, char_based)):
        return Cleaned(text, lang, score, f"gopher_repetition:{failed}")
    if rules.gopher_quality.enabled and (failed := gopher_quality(text, rules.gopher_quality, char_based)):
        return Cleaned(text, lang, score, f"gopher_quality:{failed}")
    if rules.c4.enabled:
        text, failed = c4(text, rules.c4, char_based)
        if failed:
            return Cleaned(text, lang, score, f"c4:{failed}")
    if rules.fineweb.enabled and (failed := fineweb(text, rules.fineweb, char_based)):
        return Cleaned(text, lang, score, f"fineweb:{failed}")
    if rules.word_diversity.enabled and (failed := word_diversity(text, rules.word_diversity, char_based)):
        return Cleaned(text, lang, score, f"word_diversity:{failed}")
    return Cleaned(text, lang, score, None)


# What cleaning produces: "doc" rows become "kept" or "rejected"; the job splits this into its outputs.
CLEAN_RESULT_SCHEMA = pa.schema(
    list(READ_SCHEMA) + [f.with_nullable(True) for f in REJECTED_SCHEMA if f.name not in DOCUMENT_SCHEMA.names]
)


def url_of(metadata: str | None) -> str | None:
    """A document's URL: its `url` field (the extract job's column, carried in metadata)."""
    if not metadata or '"url"' not in metadata:
        return None
    try:
        url = json.loads(metadata).get("url")
    except (ValueError, AttributeError):
        return None
    return url if isinstance(url, str) else None


def clean_batch(batch: pa.RecordBatch, cfg: CleanConfig, url_filter: UrlFilter | None = None,
                classifiers: Classifiers | None = None) -> pa.RecordBatch:
    """READ_SCHEMA in, CLEAN_RESULT_SCHEMA out (and the classifiers' columns): documents cleaned, everything
    else passed through. `url_filter`: cfg.url_filter with its lists read (UrlFilter), rejecting documents by
    their URL first; `classifiers`: cfg.classifiers with their models read, scoring every document cleaned
    and rejecting by their rules those the other rules kept."""
    rows = batch.to_pylist()
    for row in rows:
        if row["status"] == "doc" and url_filter and (reason := url_filter.reason(url_of(row["metadata"]))):
            row.update(status="rejected", lang="", lang_score=0.0, reason=reason)
    documents = [row for row in rows if row["status"] == "doc"]
    for row, cleaned in zip(documents, clean_texts([row["text"] for row in documents], cfg)):
        if isinstance(cleaned, Exception):
            row.update(status="quarantined", error=f"cleaning failed: {type(cleaned).__name__}: {cleaned}",
                       file=row["source"], raw=row["text"].encode("utf-8", "surrogatepass"))
        else:
            row.update(status="rejected" if cleaned.reason else "kept", text=cleaned.text, lang=cleaned.lang,
                       lang_score=cleaned.lang_score, reason=cleaned.reason)
    if not classifiers:
        return rows_to_batch(rows, CLEAN_RESULT_SCHEMA)
    scored = [row for row in rows if row["status"] in ("kept", "rejected")]
    columns = classifiers.scores([row["text"] for row in scored])
    for i, row in enumerate(scored):
        row.update({name: values[i] for name, values in columns.items()})
        if row["status"] == "kept" and (reason := classifiers.rejection(columns, i)):
            row.update(status="rejected", reason=reason)
    return rows_to_batch(rows, pa.schema(list(CLEAN_RESULT_SCHEMA) + classifiers.fields()))
