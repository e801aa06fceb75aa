"""Per-source settings of the pipeline, as a user writes them (YAML, --clean-config NAME=FILE, flags), and
the one-line errors for settings of no source; checked before Spark starts."""

import pytest
import yaml

from prep.cli import command_line
from prep.config import to_yaml
from spark_stages import pipeline
from spark_stages.runner import run_stage
from tests.conftest import write_lines


def parse(argv):
    return command_line(pipeline.Config, argv, prog="test", description="test", section_files={"clean-config": "clean"},
                        per_source="sources")[1]


def test_a_source_gets_its_settings_from_yaml_a_section_file_or_flags(tmp_path):
    (tmp_path / "all.yaml").write_text("clean: {partitions: 4}\nsources: {code: {clean: {profile: code}}}\n")
    (tmp_path / "docs.yaml").write_text("profile: docs\nen: {c4: {min_num_sentences: 2}}\n")
    cfg = parse(["--config", str(tmp_path / "all.yaml"), "--clean-config", f"manuals={tmp_path / 'docs.yaml'}",
                 "--sources.manuals.clean.en.gopher_quality.min_doc_words", "10"])
    code, manuals = pipeline.clean_settings(cfg, "code"), pipeline.clean_settings(cfg, "manuals")
    assert (code.profile, code.partitions) == ("code", 4)  # the pipeline's partitions, the source's profile
    assert (manuals.profile, manuals.en.c4.min_num_sentences, manuals.en.gopher_quality.min_doc_words) == (
        "docs", 2, 10)
    assert pipeline.clean_settings(cfg, "web") == cfg.clean  # a source without settings of its own
    printed = yaml.safe_load(to_yaml(cfg))
    assert printed["sources"]["code"] == {"clean": {"profile": "code"}}  # where the user wrote it
    (tmp_path / "printed.yaml").write_text(yaml.safe_dump(printed))
    assert parse(["--config", str(tmp_path / "printed.yaml")]) == cfg


@pytest.mark.parametrize("args, message", [
    (["--sources.zz.clean.profile", "docs"], "sources.zz: settings for a source that is not given"),
    (["--sources.web.shards.seq_len", "256"], "sources.web: shards cannot be set per source"),
    (["--sources.web.clean.profile", "prose"], "sources.web.clean.profile: unknown profile 'prose'"),
    (["--sources.web.clean.nope", "1"], "sources.web.clean.nope: unknown setting"),
    (["--sources.web", "docs"], "unrecognized arguments"),
])
def test_settings_for_no_source_or_no_setting_are_one_line_and_exit_code_2(tmp_path, capsys, args, message):
    data = write_lines(tmp_path / "in" / "a.jsonl", [{"text": "x"}], mkdir=True)
    code = run_stage(pipeline.STAGE, ["--input", f"web={data}", "--input", f"code={data}", "--output",
                                      str(tmp_path / "out"), *args])
    error = capsys.readouterr().err
    assert code == 2 and message in error and error.count("\n") == 1, error
    assert not (tmp_path / "out").exists()


def test_a_source_of_warc_files_and_documents_together_is_refused_before_spark(tmp_path, capsys):
    from tests.web_fixtures import write_warc

    folder = tmp_path / "mixed"
    write_lines(folder / "a.jsonl", [{"text": "x"}], mkdir=True)
    write_warc(folder / "crawl.warc.gz", [])
    code = run_stage(pipeline.STAGE, ["--input", f"web={folder}", "--output", str(tmp_path / "out")])
    assert code == 2 and "holds WARC files and documents" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_section_file_for_a_source_named_as_input_names_are(tmp_path):
    (tmp_path / "c.yaml").write_text("profile: code\n")
    cfg = parse(["--clean-config", f"web-2.0={tmp_path / 'c.yaml'}"])
    assert pipeline.clean_settings(cfg, "web-2.0").profile == "code"


@pytest.mark.parametrize("args, message", [
    (["--quality.positive", "{data}", "--quality.label", "good"],
     "quality.label 'good' is no label of the classifier trained here (positive, negative)"),
    (["--quality.buckets", "3"], "quality.buckets needs quality.positive or quality.model"),
    (["--quality.keep_top", "0.5"], "quality.keep_top needs quality.positive or quality.model"),
    (["--quality.positive", "{data}", "--config", "{config}"],
     "clean.classifiers.quality: 'quality' is the pipeline's quality classifier (quality.*); name it otherwise"),
    (["--config", "{config}"], "m.bin"),  # a clean classifier's model that is not there: before, after extract
])
def test_quality_settings_that_cannot_work_are_one_line_before_spark(tmp_path, capsys, args, message):
    """Found by trying: a label the trained classifier has not and a clean classifier named quality failed after
    the clean stage (a traceback, exit 1); quality's rules without a classifier were silently ignored."""
    data = write_lines(tmp_path / "in" / "a.jsonl", [{"text": "x"}], mkdir=True)
    config = {"clean": {"classifiers": {"quality": {"model": str(tmp_path / "m.bin"), "label": "good"}}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    args = [a.format(data=data, config=tmp_path / "c.yaml") for a in args]
    code = run_stage(pipeline.STAGE, ["--input", str(data), "--output", str(tmp_path / "out"), *args])
    error = capsys.readouterr().err
    assert code == 2 and message in error and error.count("\n") == 1, error
    assert not (tmp_path / "out").exists()


def test_a_clean_classifier_writing_a_column_of_the_quality_classifier_is_one_line_before_spark(tmp_path, capsys):
    """Noticed in review: a clean classifier `score_quality` on a model of three labels writes
    label_score_quality, as does a three-label quality.model; the names differ, so the check by name let it
    through, and the run failed at the score step, after the clean stage."""
    from prep.classify import fasttext_bin
    from prep.classify.train import TrainConfig, train

    kinds = {"prose": "the river runs past the old mill", "menu": "home about contact login",
             "table": "12 34 56 78 90"}
    lines = [text for text in kinds.values() for _ in range(4)]
    model = train(lines, [label for label in kinds for _ in range(4)], TrainConfig(dim=4, bucket=2**10))[0]
    fasttext_bin.write(model, str(tmp_path / "kinds.bin"))
    config = {"clean": {"classifiers": {"score_quality": {"model": str(tmp_path / "kinds.bin"), "label": "prose"}}},
              "quality": {"model": str(tmp_path / "kinds.bin"), "label": "prose"}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    data = write_lines(tmp_path / "in" / "a.jsonl", [{"text": "x"}], mkdir=True)
    code = run_stage(pipeline.STAGE, ["--input", str(data), "--output", str(tmp_path / "out"), "--config",
                                      str(tmp_path / "c.yaml")])
    error = capsys.readouterr().err
    assert code == 2 and "label_score_quality" in error and error.count("\n") == 1, error
    assert not (tmp_path / "out").exists()


def test_a_record_limit_the_stages_after_clean_do_not_share_is_one_line_before_spark(tmp_path, capsys):
    """Found by review: clean kept a 12 MB document under --clean.reader.max_record_bytes 30000000 and dedup,
    which reads documents to the readers' default limit, quarantined it."""
    data = write_lines(tmp_path / "in" / "a.jsonl", [{"text": "x"}], mkdir=True)
    for args, where in ((["--clean.reader.max_record_bytes", "30000000"], "clean.reader"),
                        (["--input", f"code={data}", "--sources.code.clean.reader.max_record_bytes", "30000000"],
                         "sources.code.clean.reader")):
        code = run_stage(pipeline.STAGE, ["--input", f"web={data}", "--output", str(tmp_path / "out"), *args])
        error = capsys.readouterr().err
        assert code == 2 and f"{where}.max_record_bytes 30000000: the stages after clean" in error, error
    assert not (tmp_path / "out").exists()


def test_settings_of_stages_the_run_does_not_run_are_named(tmp_path):
    """Found by review: extract settings for documents, decontamination settings without a benchmark, tokenizer
    settings beside a given tokenizer, quality.train without quality.positive and sources.dedup for one source
    did nothing, and the report listed them among the run's settings."""
    from prep.ingest.inputs import expand_sources

    data = write_lines(tmp_path / "in" / "a.jsonl", [{"text": "x"}], mkdir=True)
    sources = expand_sources({"default": str(data)})
    assert pipeline._settings_not_used(parse([]), sources) == []
    cfg = parse(["--extract.partitions", "7", "--decontaminate.cut.window", "50", "--tokenizer.vocab_size", "1000",
                 "--shards.tokenizer", "t.json", "--quality.train.train.epoch", "50", "--sources.dedup", "per-source"])
    assert [line.split(" (")[0] for line in pipeline._settings_not_used(cfg, sources)] == [
        "extract", "decontaminate", "tokenizer", "quality.train", "sources.dedup"]
