"""The whole pipeline in one Spark session: (extract →) clean (→ quality classifier) → dedup (→ decontaminate)
→ train tokenizer (unless given) → shards.

Writes OUT/extract/ (for WARC input), OUT/clean/, OUT/classifier/ and OUT/quality/ (with `--quality.positive
PATH` or `--quality.model PATH`), OUT/dedup/, OUT/decontaminate/ (with `--benchmark
NAME=PATH`: after dedup, so that neither the tokenizer nor the shards see benchmark text),
OUT/tokenizer/ (when no tokenizer is given) and OUT/shards/, each
exactly as the stage's own job would. Each stage reads the previous one's output from disk, so a
failed run can be continued stage by stage with the single jobs. One YAML file sets every stage
(`clean:`, `dedup:`, `tokenizer:`, `shards:` sections; `--print-config` shows them all).

Named sources (`--input web=PATH --input zh=PATH ... [--weights web=0.7,zh=0.3]`): each source is
cleaned alone (OUT/clean/NAME/); dedup runs over all of them (a document in two sources is kept in
the one named first) or, `--dedup per-source`, over each alone (OUT/dedup/docs/source=NAME/); one
tokenizer is trained on text taken from the sources in the shares of their weights; each source's
shards go to OUT/shards/NAME/, and OUT/shards/mixture.json names them with their weights (by default
each source's rows: the corpus as it is), for the loader. Decontamination runs per source
(OUT/decontaminate/NAME/).
"""

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import ClassVar

from prep.classify.scoring import ClassifierConfig, Classifiers, bucket_column, score_column
from prep.config import override
from prep.ingest.inputs import InputError, InputFile, Sources, all_files, expand_inputs, is_named, is_warc
from prep.ingest.readers import ReaderConfig
from prep.quality.url_filter import UrlFilter
from schemas.decontamination import RECORD_FILE
from schemas.mixture import MIXTURE_FILE, MixtureError, parse_weights
from spark_stages import clean as clean_stage
from spark_stages import decontaminate as decontaminate_stage
from spark_stages import dedup as dedup_stage
from spark_stages import extract as extract_stage
from spark_stages import score as score_stage
from spark_stages import shards as shards_stage
from spark_stages import tokenizer as tokenizer_stage
from spark_stages import train_classifier as train_classifier_stage
from spark_stages.outputs import claim_folder, replace_layout, write_json
from spark_stages.runner import Stage

log = logging.getLogger(__name__)


DEDUP_SCOPES = ("across", "per-source")


SOURCE_SECTIONS = ("clean",)  # the stages a source may set apart from the others


@dataclass(frozen=True)
class SourcesConfig:
    """What named sources (`--input NAME=PATH ...`) are given, and each one's own settings."""
    EXTRA: ClassVar[str] = "each"  # `sources: {code: {clean: {profile: code}}}`: code's settings (prep/config.py)
    weights: str = ""  # NAME=WEIGHT,...: each source's share of the training rows (default: its share of the rows)
    dedup: str = "across"  # across: a document in two sources is kept once, in the first named; per-source: apart
    # By source name, its own settings of the stages in SOURCE_SECTIONS, over the pipeline's: written
    # `sources: {NAME: {clean: {...}}}`, `--clean-config NAME=FILE` or `--sources.NAME.clean.KEY VALUE`
    each: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self):
        if self.dedup not in DEDUP_SCOPES:
            raise ValueError(f"dedup must be one of {', '.join(DEDUP_SCOPES)}, got {self.dedup!r}")
        parse_weights(self.weights)


@dataclass(frozen=True)
class QualityConfig:
    """A classifier of the cleaned documents, the DCLM recipe: trained in the run from documents of the quality
    wanted against the run's own cleaned text (OUT/classifier/), or given; each source's cleaned documents are
    scored (score_quality) and kept by its rules (OUT/quality/), before dedup."""
    positive: str = ""  # documents of the quality to find more of: trains the classifier (--positive)
    model: str = ""  # a classifier trained before (jobs.train_classifier's model.bin), instead of training one
    label: str = ""  # the label scored (default: train.positive_label, the trained one's)
    min_quality: float | None = None  # a document scoring under this is rejected (classifier:quality; min_score)
    keep_top: float | None = None  # keep this share of each source's documents, the best by score (exact)
    buckets: int = 0  # > 0: bucket_quality, the score's quantile (shards.split_by bucket_quality mixes them)
    # the documents the clean rules rejected scored too (OUT/quality/rules_rejected/): every document has its
    # score_quality, and the report shows the good documents a rule threw away; false saves their scoring time
    score_rejected: bool = True
    train: train_classifier_stage.Config = field(default_factory=train_classifier_stage.Config)  # how it is trained

    def __post_init__(self):
        # the rules checked as the settings are read: keep_top 1.5 had failed once the run had cleaned and trained
        ClassifierConfig(model="-", label="-", min_score=self.min_quality, keep_top=self.keep_top, buckets=self.buckets)

    def __bool__(self) -> bool:
        return bool(self.positive or self.model)

    def classifiers(self, model: str) -> Classifiers:
        return Classifiers({QUALITY: ClassifierConfig(model=model, label=self.label or self.train.positive_label,
                                                      min_score=self.min_quality, keep_top=self.keep_top,
                                                      buckets=self.buckets)})


QUALITY = "quality"


@dataclass(frozen=True)
class Config:
    """Each stage's settings; shards.tokenizer, when set, is used instead of training one."""
    extract: extract_stage.Config = field(default_factory=extract_stage.Config)  # for sources of WARC files
    clean: clean_stage.Config = field(default_factory=clean_stage.Config)
    # a classifier trained (quality.positive) or given (quality.model), scoring and sorting the cleaned text
    quality: QualityConfig = field(default_factory=QualityConfig)
    dedup: dedup_stage.Config = field(default_factory=dedup_stage.Config)
    # runs when benchmarks are given (--benchmark NAME=PATH)
    decontaminate: decontaminate_stage.Config = field(default_factory=decontaminate_stage.Config)
    tokenizer: tokenizer_stage.Config = field(default_factory=tokenizer_stage.Config)
    # 1% of the documents (by a hash of the id) held out: OUT/shards/heldout/ (NAME/heldout/ per source)
    shards: shards_stage.Config = field(default_factory=lambda: shards_stage.Config(heldout_share=0.01))
    sources: SourcesConfig = field(default_factory=SourcesConfig)


def source_weights(cfg: SourcesConfig, names: list[str]) -> dict[str, Fraction] | None:
    """The weights by source, or None (each source's rows); MixtureError unless they name exactly the sources."""
    weights = parse_weights(cfg.weights)
    if not weights:
        return None
    if set(weights) != set(names):
        raise MixtureError(f"--weights names {', '.join(weights)}; the sources are {', '.join(names)}")
    return {name: weights[name] for name in names}


def _check_quality_split(cfg: Config, quality_columns: set[str], clean_columns: set[str]) -> None:
    """A split by the quality classifier's buckets needs them written (by quality.* or a clean classifier named
    quality), and --weights names the folders of quality.buckets, b0 ... b{N-1}: both had been found only at the
    shards, after the whole run."""
    if cfg.shards.split_by != bucket_column(QUALITY) or cfg.shards.split_by in clean_columns:
        return
    if cfg.shards.split_by not in quality_columns:
        raise ValueError(f"shards.split_by {cfg.shards.split_by} needs quality.buckets (and quality.positive or "
                         "quality.model): the column is the quality classifier's buckets")
    folders = {f"b{i}" for i in range(cfg.quality.buckets)}
    if (weights := parse_weights(cfg.sources.weights)) and set(weights) != folders:
        raise ValueError(f"--weights names {', '.join(weights)}; the folders of {cfg.quality.buckets} quality buckets "
                         f"are b0 ... b{cfg.quality.buckets - 1}")


def _check_quality(cfg: Config, sources: Sources) -> set[str]:
    """The columns the quality classifier writes (none without one); ValueError if its settings cannot work."""
    quality = cfg.quality
    if quality.positive and quality.model:
        raise ValueError("quality: give positive (a classifier trained here) or model (one trained before), not both")
    if not quality:
        for name in ("min_quality", "keep_top", "buckets"):
            if getattr(quality, name):
                raise ValueError(f"quality.{name} needs quality.positive or quality.model (a classifier to score)")
        return set()
    named = [f"sources.{source}.clean" for source in sources if QUALITY in clean_settings(cfg, source).classifiers]
    if named:  # both would write the column score_quality
        where = "clean" if QUALITY in cfg.clean.classifiers else named[0]
        raise ValueError(f"{where}.classifiers.{QUALITY}: '{QUALITY}' is the pipeline's quality classifier "
                         "(quality.*); name it otherwise")
    if quality.model:
        columns = quality.classifiers(quality.model).columns()  # read and checked: one line, before Spark starts
    else:
        trained = (quality.train.positive_label, quality.train.negative_label)
        if quality.label and quality.label not in trained:
            raise ValueError(f"quality.label {quality.label!r} is no label of the classifier trained here "
                             f"({', '.join(trained)})")
        expand_inputs(quality.positive)
        columns = [score_column(QUALITY)] + ([bucket_column(QUALITY)] if quality.buckets else [])  # two labels
    return set(columns)


def _check_clean_columns(cfg: Config, sources: Sources, quality_columns: set[str]) -> set[str]:
    """The clean classifiers' models read once each setting, and none writing a column the quality classifier
    writes (names apart can still clash: `score_quality` on three labels writes label_score_quality); returns
    the columns they write."""
    seen: dict[str, Classifiers] = {}
    for source in sources:
        classifiers = clean_settings(cfg, source).classifiers
        key = repr(sorted(classifiers.items()))
        if key not in seen:
            seen[key] = Classifiers(classifiers)
        if clash := sorted(quality_columns & set(seen[key].columns())):
            raise ValueError(f"clean.classifiers: {', '.join(clash)} would be a column of a clean classifier and "
                             "of the quality classifier (quality.*): name the clean one otherwise")
    return {column for classifiers in seen.values() for column in classifiers.columns()}


def clean_settings(cfg: Config, source: str) -> clean_stage.Config:
    """The cleaning settings of one source: the pipeline's, with the source's own over them."""
    return override(cfg.clean, cfg.sources.each.get(source, {}).get("clean", {}), f"sources.{source}.clean")


def _settings_not_used(cfg: Config, sources: Sources) -> list[str]:
    """The sections set apart from their defaults for a stage this run does not run (or runs otherwise): a
    config file shared by runs of crawls and of documents may set them, so they are named in a warning, not
    refused; unnamed, the run's report showed them among its settings as if they had been applied."""
    unused = []
    if cfg.extract != extract_stage.Config() and not any(is_warc(f.path) for f in all_files(sources)):
        unused.append("extract (no source is a web crawl)")
    decontaminate = cfg.decontaminate
    if not decontaminate.benchmarks and decontaminate != decontaminate_stage.Config():
        unused.append("decontaminate (no --benchmark is given)")
    if cfg.shards.tokenizer and cfg.tokenizer != tokenizer_stage.Config():
        unused.append("tokenizer (shards.tokenizer is given: no tokenizer is trained)")
    if not cfg.quality.positive and cfg.quality.train != train_classifier_stage.Config():
        unused.append("quality.train (no quality.positive: no classifier is trained here)")
    if not cfg.quality and (cfg.quality.label or not cfg.quality.score_rejected):
        unused.append("quality.label, quality.score_rejected (no quality classifier)")
    if not is_named(sources) and cfg.sources.dedup != SourcesConfig().dedup:
        unused.append("sources.dedup (one source)")
    return unused


def check(cfg: Config, sources: Sources) -> None:
    url_filters = set()
    for name in sources:
        settings = clean_settings(cfg, name)
        if repr(settings.url_filter) not in url_filters:  # its lists read: a bad one is one line, before Spark
            url_filters.add(repr(settings.url_filter))
            UrlFilter(settings.url_filter)
        reader = settings.reader  # the stages after clean read documents up to the readers' default limit
        if reader.max_record_bytes > ReaderConfig().max_record_bytes:
            where = "clean" if reader == cfg.clean.reader else f"sources.{name}.clean"
            raise ValueError(f"{where}.reader.max_record_bytes {reader.max_record_bytes}: the stages after clean "
                             f"read documents of at most {ReaderConfig().max_record_bytes} bytes (clean would keep "
                             f"a larger one, dedup quarantine it)")
    if unused := _settings_not_used(cfg, sources):
        log.warning("settings of stages this run does not run, not used: %s", "; ".join(unused))
    quality_columns = _check_quality(cfg, sources)
    _check_quality_split(cfg, quality_columns, _check_clean_columns(cfg, sources, quality_columns))
    if cfg.shards.split_by and is_named(sources):
        raise ValueError("shards.split_by splits one source by a column: give one --input (the split's folders "
                         "are the mixture's sources)")
    if cfg.decontaminate.benchmarks:
        decontaminate_stage.check(cfg.decontaminate)
    if cfg.shards.tokenizer:
        shards_stage.tokenizer_file(cfg.shards)
    if is_named(sources):
        source_weights(cfg.sources, list(sources))
    elif cfg.sources.weights and not cfg.shards.split_by:
        raise ValueError("--weights needs named sources (--input NAME=PATH, one per source) or shards.split_by")
    for name, files in sources.items():  # the extract stage runs for a source of WARC files
        if len({is_warc(f.path) for f in files}) > 1:
            raise InputError(f"source {name!r} holds WARC files and documents: give them as two sources")
    for name, settings in cfg.sources.each.items():
        if name not in sources or not is_named(sources):
            raise ValueError(f"sources.{name}: settings for a source that is not given (the sources are "
                             f"{', '.join(sources)})")
        if unknown := sorted(set(settings) - set(SOURCE_SECTIONS)):
            raise ValueError(f"sources.{name}: {', '.join(unknown)} cannot be set per source (only "
                             f"{', '.join(SOURCE_SECTIONS)})")
        clean_settings(cfg, name)  # its settings over the pipeline's: a ConfigError names the bad key


def _folder(out: Path, stage: str, name: str, named: bool) -> Path:
    """Where a stage writes a source: OUT/STAGE/NAME for named sources, OUT/STAGE for one without a name."""
    return out / stage / name if named else out / stage


def _per_source_folders(out: Path, sources: Sources, cfg: Config) -> None:
    """The folders of the stages this run writes by source (OUT/STAGE/NAME) made tokenmill's folders of the
    sources' folders, and what an earlier run wrote there otherwise removed (outputs.replace_layout): a run of
    one input into OUT (OUT/clean/docs, OUT/shards/index.json) or of other sources. Without the record, a later
    run of one input into OUT stopped at OUT/clean, taking the sources' folders for a stranger's."""
    stages = ["clean", "shards"]
    if any(is_warc(files[0].path) for files in sources.values()):
        stages.append("extract")
    if cfg.quality:
        stages.append("quality")
    if cfg.decontaminate.benchmarks:
        stages.append("decontaminate")
    claim_folder(out / "shards")  # tokenmill's (else refused), before its mixture goes
    (out / "shards" / MIXTURE_FILE).unlink(missing_ok=True)  # first: no mixture may name a folder being removed
    for stage in stages:
        replace_layout(out / stage, set(sources) | ({MIXTURE_FILE} if stage == "shards" else set()))


def _documents(folder: Path, source: str, stage: str) -> list[InputFile]:
    try:
        return expand_inputs(str(folder))
    except InputError:
        raise InputError(f"source {source!r}: no document is left after {stage}") from None


def run(spark, sources: Sources, cfg: Config, out: str) -> dict:
    """Every stage in order; returns their stats by stage, by source where the stage runs per source
    (clean, shards). OUT/shards/mixture.json last, for named sources."""
    from report.run import STAGE_SECONDS  # here: executors import this module and need no report

    out_path, named = Path(out), is_named(sources)
    weights = source_weights(cfg.sources, list(sources)) if named else None
    if named:
        _per_source_folders(out_path, sources, cfg)
    stats: dict = {"clean": {}, "shards": {}}
    for name, files in sources.items():
        if is_warc(files[0].path):  # a crawl: its pages' text first (check made sure the whole source is)
            log.info("extract %s", name)
            extracted = _folder(out_path, "extract", name, named)
            stats.setdefault("extract", {})[name] = extract_stage.run(spark, {name: files}, cfg.extract, str(extracted))
            files = _documents(extracted / "docs", name, "extraction")
        log.info("clean %s", name)
        stats["clean"][name] = clean_stage.run(spark, {name: files}, clean_settings(cfg, name),
                                               str(_folder(out_path, "clean", name, named)))
    cleaned = {name: _documents(_folder(out_path, "clean", name, named) / "docs", name, "cleaning") for name in sources}
    if cfg.quality:
        cleaned = _scored(spark, cleaned, cfg.quality, out_path, named, stats)
    log.info("dedup (%s)", cfg.sources.dedup)
    stats["dedup"] = dedup_stage.run(spark, cleaned, cfg.dedup, str(out_path / "dedup"),
                                     per_source=cfg.sources.dedup == "per-source")
    deduplicated = {name: _documents(out_path / "dedup" / "docs" / (f"source={name}" if named else ""), name, "dedup")
                    for name in sources}
    if cfg.decontaminate.benchmarks:
        deduplicated = _decontaminated(spark, deduplicated, cfg, out_path, named, stats)
    shards_cfg = _with_tokenizer(spark, deduplicated, cfg, out_path, stats, weights)
    # committed with each folder's index: written after it, a kill between left shards that looked complete and
    # said nothing of the benchmarks cut from them
    records = ({RECORD_FILE: decontaminate_stage.decontamination_record(cfg.decontaminate)}
               if cfg.decontaminate.benchmarks else None)
    for name, files in deduplicated.items():
        log.info("shards %s", name)
        started = time.time()
        stats["shards"][name] = shards_stage.run(spark, {name: files}, shards_cfg,
                                                 str(_folder(out_path, "shards", name, named)), cfg.sources.weights,
                                                 records)
        # the shards' index.json holds no time (it is the same for the same input): the runner's run.json does
        stats.setdefault(STAGE_SECONDS, {})[f"shards/{name}" if named else "shards"] = round(time.time() - started, 1)
    if named:
        mixture = shards_stage.mixture_of(stats["shards"], weights, "source ")
        write_json(out_path / "shards" / MIXTURE_FILE, mixture)
        stats["mixture"] = mixture
    return stats


def _scored(spark, cleaned: Sources, cfg: QualityConfig, out_path: Path, named: bool, stats: dict) -> Sources:
    """The quality classifier trained (quality.positive, against every source's cleaned text) or given; each
    source's cleaned documents scored and sorted by its rules; the documents kept, by source."""
    model = cfg.model
    if not model:
        log.info("train_classifier")
        folder = out_path / "classifier"
        stats["classifier"] = train_classifier_stage.run(
            spark, {train_classifier_stage.POSITIVE: expand_inputs(cfg.positive),
                    train_classifier_stage.NEGATIVE_FROM: [f for files in cleaned.values() for f in files]},
            cfg.train, str(folder))
        model = str(folder / "model.bin")
    classifiers = cfg.classifiers(model)
    stats["quality"] = {}
    for name, files in cleaned.items():
        log.info("quality %s", name)
        folder = _folder(out_path, "quality", name, named)
        clean_rejected = _folder(out_path, "clean", name, named) / "rejected"
        rejected = expand_inputs(str(clean_rejected)) if cfg.score_rejected else None
        stats["quality"][name] = score_stage.run(spark, {name: files}, classifiers, str(folder), rejected)
    return {name: _documents(_folder(out_path, "quality", name, named) / "docs", name, "the quality classifier")
            for name in cleaned}


def _decontaminated(spark, deduplicated: Sources, cfg: Config, out_path: Path, named: bool, stats: dict) -> Sources:
    """Each source decontaminated alone; the documents kept, by source."""
    stats["decontaminate"] = {}
    for name, files in deduplicated.items():
        log.info("decontaminate %s", name)
        folder = _folder(out_path, "decontaminate", name, named)
        stats["decontaminate"][name] = decontaminate_stage.run(spark, {name: files}, cfg.decontaminate, str(folder))
    return {name: _documents(_folder(out_path, "decontaminate", name, named) / "docs", name, "decontamination")
            for name in deduplicated}


def _with_tokenizer(spark, deduplicated: Sources, cfg: Config, out_path: Path, stats: dict, weights=None):
    """The shards settings with their tokenizer: the one given, or one trained here (its report in stats)."""
    if cfg.shards.tokenizer:
        return cfg.shards
    log.info("train_tokenizer")
    stats["tokenizer"] = tokenizer_stage.run(spark, deduplicated, cfg.tokenizer, str(out_path / "tokenizer"),
                                             weights=weights)
    return dataclasses.replace(cfg.shards, tokenizer=str(out_path / "tokenizer" / "tokenizer.json"))


def summary(stats: dict) -> str:
    named = "mixture" in stats

    def per_source(label: str, stage, section: dict) -> list[str]:
        if not named:
            return [f"{label}: {stage.summary(s)}" for s in section.values()]
        return [f"{label}:", *(f"  {name}: {stage.summary(s)}" for name, s in section.items())]

    parts = per_source("extract", extract_stage, stats["extract"]) if "extract" in stats else []
    parts += per_source("clean", clean_stage, stats["clean"])
    if "classifier" in stats:
        parts.append(f"classifier: {train_classifier_stage.summary(stats['classifier'])}")
    if "quality" in stats:
        parts += per_source("quality", score_stage, stats["quality"])
    parts.append(f"dedup: {dedup_stage.summary(stats['dedup'])}")
    if named:
        parts += [f"  {name}: kept {s['kept']} of {s['input']}, {s['in_an_earlier_source']} in an earlier source"
                  for name, s in stats["dedup"]["sources"].items()]
    if "decontaminate" in stats:
        parts += per_source("decontaminate", decontaminate_stage, stats["decontaminate"])
    if "tokenizer" in stats:
        parts.append(tokenizer_stage.summary(stats["tokenizer"]))
    parts += per_source("shards", shards_stage, stats["shards"])
    if named:
        weights = (f"{name} {s['weight']}" for name, s in stats["mixture"]["sources"].items())
        parts.append(f"mixture: {', '.join(weights)}")
    return "\n".join(parts)


STAGES = (extract_stage, clean_stage, train_classifier_stage, dedup_stage, decontaminate_stage, tokenizer_stage,
          shards_stage)
STAGE = Stage("pipeline", "The whole pipeline: clean, dedup, decontaminate (with --benchmark), train the tokenizer "
              "(unless given), write shards.", Config, run, summary,
              modules=tuple(m for stage in STAGES for m in stage.STAGE.modules),
              check=check, section_files={"clean-config": "clean"}, named_inputs=True, per_source="sources",
              mapping_flags={"benchmark": ("decontaminate", "benchmarks")},
              # files it reads besides its input, kept apart from its output as the input is (positives in
              # OUT/clean/docs were removed, or rewritten before the classifier read them); a tokenizer or a model
              # an earlier run trained in OUT is read and never rewritten when given
              other_inputs=lambda cfg: [*cfg.decontaminate.benchmarks.values(),
                                        *([cfg.quality.positive] if cfg.quality.positive else [])])
