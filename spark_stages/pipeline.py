"""The whole pipeline in one Spark session: clean → dedup → train tokenizer (unless given) → shards.

Writes OUT/clean/, OUT/dedup/, OUT/tokenizer/ (when no tokenizer is given) and OUT/shards/, each
exactly as the stage's own job would. Each stage reads the previous one's output from disk, so a
failed run can be continued stage by stage with the single jobs. One YAML file sets every stage
(`clean:`, `dedup:`, `tokenizer:`, `shards:` sections; `--print-config` shows them all).

Named sources (`--input web=PATH --input zh=PATH ... [--weights web=0.7,zh=0.3]`): each source is
cleaned alone (OUT/clean/NAME/); dedup runs over all of them (a document in two sources is kept in
the one named first) or, `--dedup per-source`, over each alone (OUT/dedup/docs/source=NAME/); one
tokenizer is trained on text taken from the sources in the shares of their weights; each source's
shards go to OUT/shards/NAME/, and OUT/shards/mixture.json names them with their weights (by default
each source's rows: the corpus as it is), for the loader.
"""

import dataclasses
import logging
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from prep.ingest.inputs import InputError, InputFile, expand_inputs
from schemas.mixture import MIXTURE_FILE, MixtureError, new_mixture, parse_weights
from spark_stages import clean as clean_stage
from spark_stages import dedup as dedup_stage
from spark_stages import shards as shards_stage
from spark_stages import tokenizer as tokenizer_stage
from spark_stages.outputs import record_written, write_json
from spark_stages.runner import Stage

log = logging.getLogger(__name__)


DEDUP_SCOPES = ("across", "per-source")


@dataclass(frozen=True)
class SourcesConfig:
    """What named sources (`--input NAME=PATH ...`) are given."""
    weights: str = ""  # NAME=WEIGHT,...: each source's share of the training rows (default: its share of the rows)
    dedup: str = "across"  # across: a document in two sources is kept once, in the first named; per-source: apart

    def __post_init__(self):
        if self.dedup not in DEDUP_SCOPES:
            raise ValueError(f"dedup must be one of {', '.join(DEDUP_SCOPES)}, got {self.dedup!r}")
        parse_weights(self.weights)


@dataclass(frozen=True)
class Config:
    """Each stage's settings; shards.tokenizer, when set, is used instead of training one."""
    clean: clean_stage.Config = field(default_factory=clean_stage.Config)
    dedup: dedup_stage.Config = field(default_factory=dedup_stage.Config)
    tokenizer: tokenizer_stage.Config = field(default_factory=tokenizer_stage.Config)
    shards: shards_stage.Config = field(default_factory=shards_stage.Config)
    sources: SourcesConfig = field(default_factory=SourcesConfig)


def source_weights(cfg: SourcesConfig, names: list[str]) -> dict[str, Fraction] | None:
    """The weights by source, or None (each source's rows); MixtureError unless they name exactly the sources."""
    weights = parse_weights(cfg.weights)
    if not weights:
        return None
    if set(weights) != set(names):
        raise MixtureError(f"--weights names {', '.join(weights)}; the sources are {', '.join(names)}")
    return {name: weights[name] for name in names}


def check(cfg: Config, sources: list[str] | None) -> None:
    if cfg.shards.tokenizer:
        shards_stage.tokenizer_file(cfg.shards)
    if sources:
        source_weights(cfg.sources, sources)
    elif cfg.sources.weights:
        raise ValueError("--weights needs named sources: --input NAME=PATH (one per source)")


def run(spark, files: list[InputFile] | dict[str, list[InputFile]], cfg: Config, out: str) -> dict:
    """Every stage in order; returns their stats by stage (by source where the stage runs per source)."""
    if isinstance(files, dict):
        return run_sources(spark, files, cfg, out)
    out_path, stats = Path(out), {}
    log.info("clean")
    stats["clean"] = clean_stage.run(spark, files, cfg.clean, str(out_path / "clean"))
    log.info("dedup")
    stats["dedup"] = dedup_stage.run(spark, expand_inputs(str(out_path / "clean" / "docs")), cfg.dedup,
                               str(out_path / "dedup"))
    deduplicated = expand_inputs(str(out_path / "dedup" / "docs"))
    shards_cfg = _with_tokenizer(spark, deduplicated, cfg, out_path, stats)
    log.info("shards")
    stats["shards"] = shards_stage.run(spark, deduplicated, shards_cfg, str(out_path / "shards"))
    return stats


def _with_tokenizer(spark, deduplicated, cfg: Config, out_path: Path, stats: dict, weights=None):
    """The shards settings with their tokenizer: the one given, or one trained here (its report in stats)."""
    if cfg.shards.tokenizer:
        return cfg.shards
    log.info("train_tokenizer")
    stats["tokenizer"] = tokenizer_stage.run(spark, deduplicated, cfg.tokenizer, str(out_path / "tokenizer"),
                                             weights=weights)
    return dataclasses.replace(cfg.shards, tokenizer=str(out_path / "tokenizer" / "tokenizer.json"))


def _documents(folder: Path, source: str, stage: str) -> list[InputFile]:
    try:
        return expand_inputs(str(folder))
    except InputError:
        raise InputError(f"source {source!r}: no document is left after {stage}") from None


def run_sources(spark, sources: dict[str, list[InputFile]], cfg: Config, out: str) -> dict:
    """The pipeline over named sources, in the order named; OUT/shards/mixture.json last."""
    out_path = Path(out)
    weights = source_weights(cfg.sources, list(sources))
    stats: dict = {"clean": {}, "shards": {}}
    for name, files in sources.items():
        log.info("clean %s", name)
        stats["clean"][name] = clean_stage.run(spark, files, cfg.clean, str(out_path / "clean" / name))
    cleaned = {name: _documents(out_path / "clean" / name / "docs", name, "cleaning") for name in sources}
    log.info("dedup (%s)", cfg.sources.dedup)
    stats["dedup"] = dedup_stage.run(spark, cleaned, cfg.dedup, str(out_path / "dedup"),
                                     per_source=cfg.sources.dedup == "per-source")
    deduplicated = {name: _documents(out_path / "dedup" / "docs" / f"source={name}", name, "dedup")
                    for name in sources}
    shards_cfg = _with_tokenizer(spark, deduplicated, cfg, out_path, stats, weights)
    shards_out = out_path / "shards"
    record_written(shards_out, [MIXTURE_FILE, *sources])  # a folder of tokenmill's holding the sources' folders
    (shards_out / MIXTURE_FILE).unlink(missing_ok=True)  # first: no mixture may name shards being rewritten
    for name, files in deduplicated.items():
        log.info("shards %s", name)
        stats["shards"][name] = shards_stage.run(spark, files, shards_cfg, str(shards_out / name))
    mixture = new_mixture({name: (name, float(weights[name]) if weights else index["totals"]["rows"], index)
                           for name, index in stats["shards"].items()})
    write_json(shards_out / MIXTURE_FILE, mixture)
    stats["mixture"] = mixture
    return stats


def summary(stats: dict) -> str:
    def per_source(stage, section: dict) -> list[str]:
        return [f"  {name}: {stage.summary(s)}" for name, s in section.items()]

    named = "mixture" in stats
    parts = ["clean:", *per_source(clean_stage, stats["clean"])] if named else \
        [f"clean: {clean_stage.summary(stats['clean'])}"]
    parts.append(f"dedup: {dedup_stage.summary(stats['dedup'])}")
    if named:
        parts += [f"  {name}: kept {s['kept']} of {s['input']}, {s['in_an_earlier_source']} in an earlier source"
                  for name, s in stats["dedup"]["sources"].items()]
    if "tokenizer" in stats:
        parts.append(tokenizer_stage.summary(stats["tokenizer"]))
    if named:
        parts += ["shards:", *per_source(shards_stage, stats["shards"])]
        weights = (f"{name} {s['weight']}" for name, s in stats["mixture"]["sources"].items())
        parts.append(f"mixture: {', '.join(weights)}")
    else:
        parts.append(f"shards: {shards_stage.summary(stats['shards'])}")
    return "\n".join(parts)


STAGE = Stage("pipeline", "The whole pipeline: clean, dedup, train the tokenizer (unless given), write shards.",
              Config, run, summary,
              modules=tuple(m for stage in (clean_stage, dedup_stage, tokenizer_stage, shards_stage)
                            for m in stage.STAGE.modules),
              check=check, section_files={"clean-config": "clean"}, named_inputs=True)
