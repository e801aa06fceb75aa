"""Every setting of every job is reachable three ways with one name: its path in the YAML, the flag of
that path, and --print-config; each flag has help from its field's declaration."""

import dataclasses
import typing

import pytest
import yaml

from prep.cli import _scalar, command_line, flags
from prep.config import to_yaml
from report.config import ReportConfig
from spark_stages import clean, dedup, pipeline, shards, tokenizer
from trainer.evaluate import EvalConfig
from trainer.loop import TrainConfig

CONFIGS = [pipeline.Config, clean.Config, dedup.Config, tokenizer.Config, shards.Config, TrainConfig, EvalConfig,
           ReportConfig]
ids = pytest.mark.parametrize("config_type", CONFIGS, ids=lambda c: f"{c.__module__}.{c.__name__}")


def fields_of(cls, path=()):
    """Every setting's path, sections walked into."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[field.name]):
            yield from fields_of(hints[field.name], (*path, field.name))
        else:
            yield (*path, field.name)


def at(config, path):
    for name in path:
        config = config[name] if isinstance(config, dict) else getattr(config, name)
    return config


def another(flag, value) -> str | None:
    """A value of the flag's scalar type other than `value`, as typed on the command line."""
    scalar = _scalar(flag.type)
    if scalar is bool:
        return "false" if value else "true"
    if scalar is int:
        return str((value or 0) + 1)
    if scalar is float:
        return str(value / 2 if value else 0.5)
    return None  # texts are often names checked against a list, lists are YAML: the round trip covers them


@ids
def test_every_field_has_a_flag_with_help(config_type):
    found = {flag.path: flag for flag in flags(config_type)}
    assert sorted(found) == sorted(fields_of(config_type))
    assert [flag.name for flag in found.values() if not flag.help] == []


@ids
def test_print_config_then_config_gives_the_same_settings_and_each_flag_sets_its_field(config_type, tmp_path, capsys):
    def parse(argv):
        return command_line(config_type, argv, prog="test", description="test")[1]

    with pytest.raises(SystemExit):
        parse(["--print-config"])
    (tmp_path / "printed.yaml").write_text(capsys.readouterr().out)
    assert parse(["--config", str(tmp_path / "printed.yaml")]) == config_type()
    default, checked, candidates = config_type(), 0, 0
    for flag in flags(config_type):
        text = another(flag, at(default, flag.path))
        if text is None:
            continue
        candidates += 1
        try:
            cfg = parse([flag.option_strings()[0], text])
        except SystemExit:  # a value the dataclass's own check refuses (bands x rows must fit num_perm, ...)
            capsys.readouterr()
            continue
        assert at(cfg, flag.path) != at(default, flag.path), flag.name
        assert at(yaml.safe_load(to_yaml(cfg)), flag.path) == at(cfg, flag.path), flag.name
        checked += 1
    assert checked >= candidates * 3 // 4  # most values pass the dataclasses' own checks


@ids
def test_help_lists_every_flag(config_type, capsys):
    with pytest.raises(SystemExit) as exit_:
        command_line(config_type, ["--help"], prog="test", description="test")
    printed = capsys.readouterr().out
    assert exit_.value.code == 0 and all(f"--{flag.name}" in printed for flag in flags(config_type))


@pytest.mark.parametrize("argv, message", [
    # found by review, each accepted before: shrink 1 pruned nothing (the tokenizer's training ran for ever),
    # -1 or 0 meant as "no limit" quarantined every record or skipped every page, a seed past 32 bits failed
    # every signature task, an infinite page time overflowed every page's timer, keep_top 1.5 and partitions
    # -1 failed after Spark's work; NaN, inf and 1e30 anywhere (prep/config.py: tests/prep/test_cli.py)
    (["--tokenizer.unigram.shrink", "1"], "shrink in (0, 0.99]"),
    (["--tokenizer.unigram.em-iterations", "0"], "em_iterations at least 1"),
    (["--tokenizer.bpe.min-frequency", "-1"], "min_frequency must be at least 1"),
    (["--clean.reader.max-record-bytes", "0"], "max_record_bytes, parquet_batch_rows"),
    (["--extract.warc.max-payload-bytes", "-1"], "warc.max_payload_bytes must be 1 to 1,073,741,824"),
    # 1e11, meant as no limit, failed every compressed page (a decoder's bound is a machine word)
    (["--extract.warc.max-payload-bytes", "100000000000"], "warc.max_payload_bytes must be 1 to"),
    (["--extract.page-seconds", "1e7"], "page_seconds must be in (0, 86400]"),
    (["--dedup.minhash.seed", "4294967296"], "seed in [0, 2**32)"),
    (["--quality.keep-top", "1.5"], "keep_top is a share in (0, 1]"),
    (["--dedup.partitions", "-1"], "partitions must be 1 to 1,000,000"),
    (["--decontaminate.partitions", "0"], "partitions must be 1 to"),
    (["--clean.partitions", "-1"], "partitions must be 1 to"),
    # past a Java int: the JVM failed at the repartition, after all the work (extract, decontaminate alike)
    (["--extract.partitions", "3000000000"], "partitions must be 1 to 1,000,000"),
    (["--dedup.partitions", "1000001"], "partitions must be 1 to"),
    (["--clean.en.fineweb.line-punct-thr", "nan"], "expected a finite number"),
    # a window of 0 words divided by zero in every task; a shard of 1e-7 MiB is 0 bytes
    (["--clean.en.word-diversity.window-words", "0"], "window_words must be at least 1"),
    (["--shards.shard-mb", "1e-7"], "shard_mb must be at least 0.015625 (16 KiB)"),
    # past the index's bound the job did all its work and wrote an index the loader refuses
    (["--shards.pack.seq-len", "8388608"], "seq_len must be a positive multiple of 128 up to 4,194,304"),
    # a pair of three was cut to two, a pair of one padded nothing (then unpacking failed in every task)
    (["--clean.en.gopher-repetition.top-n-grams", "[[2, 0.2, 9]]"], "expected 2 values"),
    (["--clean.en.gopher-repetition.dup-n-grams", "[[5]]"], "expected 2 values"),
])
def test_a_value_that_cannot_work_is_one_line_before_the_run(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        command_line(pipeline.Config, argv, prog="test", description="test")
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and message in error and error.count("\n") == 1, error
