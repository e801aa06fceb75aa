"""The whole pipeline in one Spark session: clean → dedup → train tokenizer (unless given) → tokenize.

    spark-submit jobs/pipeline.py --input IN --output OUT [--tokenizer FILE] [--vocab-size 131072]
        [--seq-len 4096] [--clean-config FILE] [--conf key=value ...]
    python -m jobs.pipeline ...

Writes OUT/clean/, OUT/dedup/, OUT/tokenizer/ (when no --tokenizer is given) and OUT/shards/, each
exactly as the stage's own job would. Each stage reads the previous one's output from disk, so a
failed run can be continued stage by stage with the single jobs.
"""

import os
import sys

if __package__ in (None, ""):  # run as a file by spark-submit: put the project root in place of jobs/ on the
    # path, before anything imports the standard library's tokenize (jobs/tokenize.py would shadow it)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import argparse
from pathlib import Path

from jobs import clean, dedup, tokenize, train_tokenizer
from jobs.spark_session import spark_for_job
from prep.clean import load_clean_config
from prep.config import ConfigError
from prep.dedup import DedupConfig
from prep.encode import TokenizerFile
from prep.inputs import InputError, expand_inputs
from prep.packing import PackConfig
from prep.shard_writer import ShardConfig
from prep.tokenizer_train import TokenizerConfig


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="jobs.pipeline", description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, help="files, directories or globs, comma-separated")
    parser.add_argument("--output", required=True, help="output folder: clean/, dedup/, tokenizer/, shards/")
    parser.add_argument("--tokenizer", help="an existing tokenizer.json (default: train one on the dedup output)")
    parser.add_argument("--vocab-size", type=int, default=131_072, help="of the trained tokenizer (default 131072)")
    parser.add_argument("--seq-len", type=int, default=4096, help="tokens per row at most (default 4096)")
    parser.add_argument("--clean-config", help="YAML overrides of the cleaning rules (see jobs.clean)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting (repeatable)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.output)
    try:
        clean_cfg = load_clean_config(args.clean_config)
        tokenizer_cfg = TokenizerConfig(vocab_size=args.vocab_size)
        pack_cfg = PackConfig(seq_len=args.seq_len)
        given = TokenizerFile.read(args.tokenizer) if args.tokenizer else None
        files = expand_inputs(args.input)
    except (InputError, ConfigError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    spark = spark_for_job("tokenmill-pipeline", args.conf,
                          ("jobs.clean", "jobs.dedup", "jobs.train_tokenizer", "jobs.tokenize"))
    print("clean:", clean.summary(clean.run_clean(spark, files, clean_cfg, str(out / "clean"))))
    print("dedup:", dedup.summary(dedup.run_dedup(spark, expand_inputs(str(out / "clean" / "docs")), DedupConfig(),
                                                  str(out / "dedup"))))
    deduplicated = expand_inputs(str(out / "dedup" / "docs"))
    if given is None:
        report = train_tokenizer.run_train_tokenizer(spark, deduplicated, tokenizer_cfg, str(out / "tokenizer"),
                                                     train_tokenizer.DEFAULT_SAMPLE_BYTES,
                                                     train_tokenizer.DEFAULT_HELD_OUT)
        print(train_tokenizer.summary(report))
        given = TokenizerFile.read(str(out / "tokenizer" / "tokenizer.json"))
    index = tokenize.run_tokenize(spark, deduplicated, given, str(out / "shards"), pack_cfg, ShardConfig())
    print("tokenize:", tokenize.summary(index))
    return 0


if __name__ == "__main__":
    sys.exit(main())
