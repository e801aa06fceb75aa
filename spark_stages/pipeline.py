"""The whole pipeline in one Spark session: clean → dedup → train tokenizer (unless given) → shards.

Writes OUT/clean/, OUT/dedup/, OUT/tokenizer/ (when no tokenizer is given) and OUT/shards/, each
exactly as the stage's own job would. Each stage reads the previous one's output from disk, so a
failed run can be continued stage by stage with the single jobs. One YAML file sets every stage
(`clean:`, `dedup:`, `tokenizer:`, `shards:` sections; `--print-config` shows them all).
"""

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

from prep.ingest.inputs import InputFile, expand_inputs
from spark_stages import clean as clean_stage
from spark_stages import dedup as dedup_stage
from spark_stages import shards as shards_stage
from spark_stages import tokenizer as tokenizer_stage
from spark_stages.runner import Stage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Config:
    """Each stage's settings; shards.tokenizer, when set, is used instead of training one."""
    clean: clean_stage.Config = field(default_factory=clean_stage.Config)
    dedup: dedup_stage.Config = field(default_factory=dedup_stage.Config)
    tokenizer: tokenizer_stage.Config = field(default_factory=tokenizer_stage.Config)
    shards: shards_stage.Config = field(default_factory=shards_stage.Config)


def check(cfg: Config) -> None:
    if cfg.shards.tokenizer:
        shards_stage.tokenizer_file(cfg.shards)


def run(spark, files: list[InputFile], cfg: Config, out: str) -> dict:
    """Every stage in order; returns their stats by stage."""
    out_path, stats = Path(out), {}
    log.info("clean")
    stats["clean"] = clean_stage.run(spark, files, cfg.clean, str(out_path / "clean"))
    log.info("dedup")
    stats["dedup"] = dedup_stage.run(spark, expand_inputs(str(out_path / "clean" / "docs")), cfg.dedup,
                               str(out_path / "dedup"))
    deduplicated = expand_inputs(str(out_path / "dedup" / "docs"))
    shards_cfg = cfg.shards
    if not shards_cfg.tokenizer:
        log.info("train_tokenizer")
        stats["tokenizer"] = tokenizer_stage.run(spark, deduplicated, cfg.tokenizer, str(out_path / "tokenizer"))
        shards_cfg = dataclasses.replace(shards_cfg, tokenizer=str(out_path / "tokenizer" / "tokenizer.json"))
    log.info("shards")
    stats["shards"] = shards_stage.run(spark, deduplicated, shards_cfg, str(out_path / "shards"))
    return stats


def summary(stats: dict) -> str:
    parts = [f"clean: {clean_stage.summary(stats['clean'])}", f"dedup: {dedup_stage.summary(stats['dedup'])}"]
    if "tokenizer" in stats:
        parts.append(tokenizer_stage.summary(stats["tokenizer"]))
    parts.append(f"shards: {shards_stage.summary(stats['shards'])}")
    return "\n".join(parts)


STAGE = Stage("pipeline", "The whole pipeline: clean, dedup, train the tokenizer (unless given), write shards.",
              Config, run, summary,
              modules=tuple(m for stage in (clean_stage, dedup_stage, tokenizer_stage, shards_stage)
                            for m in stage.STAGE.modules),
              check=check, section_files={"clean-config": "clean"})
