"""One gatherer per stage: `gather(run, stage) -> StageView`, from the stage's output alone (and, for the
documents a stage removed from its output, from its input)."""

from report.stages import classifier, clean, decontaminate, dedup, extract, shards, tokenizer

GATHERERS = {"extract": extract.gather, "clean": clean.gather, "quality": clean.gather,
             "classifier": classifier.gather, "dedup": dedup.gather, "decontaminate": decontaminate.gather,
             "tokenizer": tokenizer.gather, "shards": shards.gather}
