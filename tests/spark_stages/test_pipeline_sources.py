"""`python -m jobs.pipeline --input NAME=PATH ...`: per-source cleaning and shards, dedup across sources
(a copy kept in the source named first) or per source, a tokenizer sample that follows the weights,
mixture.json that validates and loads, and errors that name the source."""

import io
import json
from fractions import Fraction

import pyarrow.dataset as ds
import pytest
import zstandard

from loaders.shard_loader import ShardLoader
from prep.ingest.inputs import expand_inputs
from schemas.validate import validate, validate_mixture
from spark_stages import dedup as dedup_stage
from spark_stages import pipeline
from spark_stages.ingest import SOURCE
from spark_stages.runner import run_stage
from spark_stages.tokenizer import source_rates
from tests.spark_stages.conftest import run_printing

pytestmark = pytest.mark.spark

WEIGHTS = "web=0.37,zh=0.5,code=0.12,mirror=0.01"
COPIES = 3  # documents of the web source that the mirror source copies under other ids


def read_sample(sample_dir, name: str) -> list[dict]:
    raw = zstandard.ZstdDecompressor().stream_reader(open(sample_dir / f"{name}.jsonl.zst", "rb"))
    return [json.loads(line) for line in io.TextIOWrapper(raw, encoding="utf-8") if line.strip()]


@pytest.fixture(scope="module")
def sources(sample_dir, tmp_path_factory):
    """NAME=PATH arguments: web, zh and code from the sample, and mirror: licenses plus copies of web."""
    mirror = tmp_path_factory.mktemp("mirror")
    copies = read_sample(sample_dir, "debian-faq.en")[:COPIES]
    (mirror / "copies.jsonl").write_text("".join(json.dumps({"id": f"mirror-{i}", "text": d["text"]}) + "\n"
                                                 for i, d in enumerate(copies)))
    (mirror / "licenses.en.jsonl.zst").write_bytes((sample_dir / "licenses.en.jsonl.zst").read_bytes())
    return {"web": f"{sample_dir}/debian-faq.en.jsonl.zst,{sample_dir}/debian-reference.en.jsonl.zst",
            "zh": f"{sample_dir}/debian-faq.zh.jsonl.zst,{sample_dir}/debian-faq-html.zh.jsonl.zst",
            "code": f"{sample_dir}/python-index-pages.en.jsonl.zst", "mirror": str(mirror)}


@pytest.fixture(scope="module")
def mixture_run(spark, sources, tmp_path_factory):
    """(the run's folder, what it printed): in this process, on the run's Spark (tests/spark_stages/
    test_pipeline.py runs the pipeline as a command)."""
    from spark_stages.outputs import record_written

    del spark  # the session the run finds
    out = tmp_path_factory.mktemp("mixture")
    # an earlier pipeline of one input wrote its shards unsplit here: they go (found by the kill review of
    # 2026-12-07: they stayed, and the validator and the loader given OUT/shards read the old corpus)
    record_written(out, ["shards"])
    record_written(out / "shards", ["index.json", "shard-00000.arrow", "heldout"])
    (out / "shards" / "heldout").mkdir()
    for name in ("index.json", "shard-00000.arrow", "heldout/index.json"):
        (out / "shards" / name).write_text("an earlier run's")
    # ... and its cleaned documents, and a source this run does not have (found by a newcomer's run through the
    # docs, 2026-12-07: OUT/clean/docs stayed, beside OUT/clean/web, and read as this run's)
    record_written(out / "clean", ["docs", "stats.json", "gone"])
    for name in ("docs/part-00000.parquet", "stats.json", "gone/stats.json"):
        (out / "clean" / name).parent.mkdir(exist_ok=True)
        (out / "clean" / name).write_text("an earlier run's")
    inputs = [arg for name, path in sources.items() for arg in ("--input", f"{name}={path}")]
    # the Python docs cleaned as documentation, the rest as web
    code, printed = run_printing(pipeline.STAGE, [*inputs, "--weights", WEIGHTS, "--output", str(out),
                                                  "--vocab-size", "4096", "--sources.code.clean.profile", "docs"])
    assert code == 0, printed[-3000:]
    return out, printed


def test_each_source_has_its_shards_and_the_mixture_names_them(mixture_run):
    out, stdout = mixture_run
    mixture = json.loads((out / "shards" / "mixture.json").read_text())
    assert list(mixture["sources"]) == ["web", "zh", "code", "mirror"]
    assert validate_mixture(out / "shards" / "mixture.json") == []
    for name, entry in mixture["sources"].items():
        index = json.loads((out / "shards" / name / "index.json").read_text())
        assert validate(out / "shards" / name) == [] and entry["path"] == name
        assert (entry["rows"], entry["tokens"]) == (index["totals"]["rows"], index["totals"]["tokens"])
        assert (out / "clean" / name / "stats.json").is_file()
    assert {n: e["weight"] for n, e in mixture["sources"].items()} == {"web": 0.37, "zh": 0.5, "code": 0.12,
                                                                       "mirror": 0.01}
    assert "mixture: web 0.37, zh 0.5, code 0.12, mirror 0.01" in stdout
    assert not any((out / "shards" / name).exists() for name in ("index.json", "shard-00000.arrow", "heldout"))
    assert sorted(p.name for p in (out / "clean").iterdir() if not p.name.startswith(".")) == [
        "code", "mirror", "web", "zh"]


def test_a_document_in_two_sources_is_kept_once_in_the_source_named_first(mixture_run):
    out, _ = mixture_run
    stats = json.loads((out / "dedup" / "stats.json").read_text())
    per_source = stats["sources"]
    assert stats["scope"] == "across" and sum(s["kept"] for s in per_source.values()) == stats["kept"]
    cleaned = {name: json.loads((out / "clean" / name / "stats.json").read_text())["kept"] for name in per_source}
    assert {name: s["input"] for name, s in per_source.items()} == cleaned
    kept_ids = {name: set(ds.dataset(out / "dedup" / "docs" / f"source={name}").to_table(columns=["id"])
                           .column("id").to_pylist()) for name in per_source}
    mirror_copies = {f"mirror-{i}" for i in range(COPIES)}
    clean_mirror = set(ds.dataset(out / "clean" / "mirror" / "docs").to_table(columns=["id"]).column("id").to_pylist())
    copies_after_cleaning = mirror_copies & clean_mirror
    assert copies_after_cleaning and not copies_after_cleaning & kept_ids["mirror"]  # dropped from mirror ...
    assert per_source["mirror"]["in_an_earlier_source"] >= len(copies_after_cleaning)
    assert per_source["web"]["in_an_earlier_source"] == 0  # ... and kept in web, named first
    clusters = ds.dataset(out / "dedup" / "clusters").to_table().to_pandas()
    copies = clusters[clusters.id.isin(copies_after_cleaning)]
    heads = clusters.set_index("id").loc[copies.cluster_id]
    assert set(heads.source) == {"web"} and heads.kept.all()


def test_sources_deduplicated_apart_keep_their_copies(spark, mixture_run, tmp_path):
    out, _ = mixture_run
    cleaned = {name: expand_inputs(str(out / "clean" / name / "docs")) for name in ("web", "mirror")}
    stats = dedup_stage.run(spark, cleaned, dedup_stage.Config(), str(tmp_path / "apart"), per_source=True)
    assert stats["scope"] == "per-source"
    assert all(s["in_an_earlier_source"] == 0 for s in stats["sources"].values())
    across = json.loads((out / "dedup" / "stats.json").read_text())["sources"]
    assert stats["sources"]["web"]["kept"] == across["web"]["kept"]
    assert stats["sources"]["mirror"]["kept"] > across["mirror"]["kept"]


def test_the_tokenizer_sample_follows_the_weights(spark, mixture_run):
    texts = spark.createDataFrame([(0, "a" * 100), (0, "b" * 300), (1, "c" * 100), (2, "d" * 50)],
                                  f"{SOURCE} int, text string")
    # bytes 400, 100, 50; weights 1, 1, 2: per byte 1/400, 1/100, 1/25 -> kept 1/16, 1/4, 1 of each
    rates = source_rates(texts, [Fraction(1), 1, 2.0])
    assert rates == [1 / 16, 1 / 4, 1.0]  # kept bytes 25, 25, 50: the weights' shares
    out, _ = mixture_run
    report = json.loads((out / "tokenizer" / "report.json").read_text())
    assert max(report["training"]["source_rates"].values()) == 1.0
    assert set(report["training"]["source_rates"]) == {"web", "zh", "code", "mirror"}


def test_the_loader_reads_the_mixture_the_pipeline_wrote(mixture_run):
    out, _ = mixture_run
    loader = ShardLoader(str(out / "shards" / "mixture.json"), 100, seed=1)
    batch = next(loader)
    counts = [batch["source"].tolist().count(i) for i in range(4)]
    assert loader.sources == ["web", "zh", "code", "mirror"] and counts == [37, 50, 12, 1]
    loader.close()


@pytest.mark.parametrize("args, message", [
    (["--input", "web=data/sample/debian-faq.en.jsonl.zst", "--input", "data/sample"], "name every --input"),
    (["--input", "web=data/sample/debian-faq.en.jsonl.zst", "--input", "web=data/sample"], "'web' is named twice"),
    (["--input", "web=data/sample/missing"], "source 'web': data/sample/missing: no such file"),
    (["--input", "web=data/sample", "--weights", "web=1,zh=2"], "--weights names web, zh; the sources are web"),
    (["--input", "web=data/sample", "--weights", "web=-1"], "source 'web': weight '-1' must be a positive"),
    (["--input", "data/sample", "--weights", "web=1"], "--weights needs named sources"),
    (["--input", "web=data/sample", "--dedup", "sideways"], "dedup must be one of across, per-source"),
])
def test_bad_sources_or_weights_fail_before_spark_naming_what(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(pipeline.__file__.rsplit("/", 2)[0])
    assert run_stage(pipeline.STAGE, [*args, "--output", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err



def test_a_source_is_cleaned_with_its_own_settings_and_the_others_with_the_pipelines(mixture_run, sample_dir):
    from prep.clean import CleanConfig, clean_text
    from prep.config import override

    out, _ = mixture_run
    texts = [d["text"] for d in read_sample(sample_dir, "python-index-pages.en")]
    kept = {profile: sum(clean_text(t, override(CleanConfig(), {"profile": profile})).reason is None for t in texts)
            for profile in ("web", "docs")}
    assert kept["docs"] > kept["web"]  # the profile matters for these documents
    assert json.loads((out / "clean" / "code" / "stats.json").read_text())["kept"] == kept["docs"]
    web = [d["text"] for name in ("debian-faq.en", "debian-reference.en") for d in read_sample(sample_dir, name)]
    assert json.loads((out / "clean" / "web" / "stats.json").read_text())["kept"] == sum(
        clean_text(t, CleanConfig()).reason is None for t in web)


def test_a_pipeline_whose_every_document_is_rejected_stops_naming_why_and_reports_what_ran(spark, tmp_path, capsys):
    del spark  # the session the run finds
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"id": f"r{i}", "text": "lorem ipsum"}) + "\n"
                                               for i in range(50)))
    out = tmp_path / "out"
    assert run_stage(pipeline.STAGE, ["--input", str(tmp_path / "in.jsonl"), "--output", str(out),
                                      "--vocab-size", "4096"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "no text to train the tokenizer on" in line]
    assert len(errors) == 1, errors
    # the clean stage's rejections are what the user needs to see: its report is written
    assert json.loads((out / "clean" / "stats.json").read_text())["rejected"] == 50
    assert (out / "report.html").is_file() and "lorem ipsum" in (out / "report.html").read_text()


def test_shards_are_never_complete_without_the_benchmarks_cut_from_them(spark, sample_dir, tmp_path, monkeypatch):
    """Found by the kill review of 2026-12-07: the pipeline wrote decontamination.json after the shards' commit,
    so a run killed between them left shards that validated and told the training loop they had never been
    decontaminated. The record now comes with the commit, before the index that marks the folder complete."""
    from schemas.decontamination import RECORD_FILE
    from spark_stages import outputs
    from tests.decontam_fixtures import english_items

    del spark  # the session the run finds
    (tmp_path / "items.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n"
                                                  for i, t in enumerate(english_items(5))))
    write, killed = outputs.replace_bytes, []

    def killed_writing_the_record(path, data):
        if path.name == RECORD_FILE:
            killed.append(path)
            raise KeyboardInterrupt("killed as the record was written")
        write(path, data)

    monkeypatch.setattr(outputs, "replace_bytes", killed_writing_the_record)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_printing(pipeline.STAGE, ["--input", f"{sample_dir}/debian-faq.en.jsonl.zst", "--output", str(out),
                                      "--vocab-size", "4096", "--benchmark", f"faq={tmp_path / 'items.jsonl'}"])
    assert killed and (out / "dedup" / "stats.json").is_file()  # killed on the way to the shards' completion
    assert not (out / "shards" / "index.json").exists() and validate(out / "shards") != []


def test_a_run_of_one_input_replaces_a_run_of_named_sources(spark, mixture_run, sample_dir, tmp_path):
    """Found by a newcomer's run through the docs (2026-12-07): a pipeline of one input into the folder of a
    pipeline of named sources stopped at the clean stage, with a traceback, taking OUT/clean/web for a stranger's
    folder (nothing recorded it as tokenmill's), and the sources' shards and mixture.json would have stayed."""
    import shutil

    del spark  # the session the run finds
    out = tmp_path / "out"
    shutil.copytree(mixture_run[0], out, symlinks=True)
    code, printed = run_printing(pipeline.STAGE, ["--input", f"{sample_dir}/debian-faq.en.jsonl.zst", "--output",
                                                  str(out), "--vocab-size", "4096"])
    assert code == 0, printed[-3000:]
    for stage in ("clean", "shards"):
        assert not {"web", "zh", "code", "mirror", "mixture.json"} & {p.name for p in (out / stage).iterdir()}, stage
    assert validate(out / "shards") == [] and (out / "clean" / "docs").is_dir()


def test_a_stage_folder_refused_on_the_way_is_one_line(spark, mixture_run, sample_dir, tmp_path, capsys):
    """A pipeline of named sources of an earlier version recorded no OUT/clean: a run of one input into its folder
    refuses OUT/clean's folders as a stranger's, in one line with exit code 2 (a traceback and exit 1 before:
    an OutputError on the way), and removes nothing."""
    import shutil

    del spark  # the session the run finds
    out = tmp_path / "out"
    shutil.copytree(mixture_run[0], out, symlinks=True)
    (out / "clean" / ".tokenmill").unlink()
    code = run_stage(pipeline.STAGE, ["--input", f"{sample_dir}/debian-faq.en.jsonl.zst", "--output", str(out),
                                      "--vocab-size", "4096"])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    assert code == 2 and len(errors) == 1 and "tokenmill did not write (code, mirror, web" in errors[0], errors
    assert {p.name for p in (out / "clean").iterdir() if not p.name.startswith(".")} == {"code", "mirror", "web", "zh"}


def test_positives_inside_the_output_are_refused_before_anything_goes(tmp_path, capsys, monkeypatch):
    """Found by the review of 2026-12-08: positives in OUT/clean/docs (documents an earlier run of one input
    cleaned) were removed as a run of named sources cleared OUT/clean (a run of one input rewrites them before
    the classifier reads them); the runner kept only --input and --benchmark apart from the output."""
    from spark_stages.outputs import record_written

    monkeypatch.chdir(pipeline.__file__.rsplit("/", 2)[0])
    out = tmp_path / "out"
    record_written(out, ["clean"])
    record_written(out / "clean", ["docs"])
    kept = out / "clean" / "docs" / "part-00000.jsonl"
    kept.parent.mkdir()
    kept.write_text(json.dumps({"id": "p1", "text": "a document the user means as a positive"}) + "\n")
    for sources in (["--input", "web=data/sample/debian-faq.en.jsonl.zst"],
                    ["--input", "data/sample/licenses.en.jsonl.zst"]):
        assert run_stage(pipeline.STAGE, [*sources, "--output", str(out), "--quality.positive", str(kept)]) == 2
        assert "holds the input file" in capsys.readouterr().err
    assert kept.is_file()


def test_no_mixture_names_a_folder_the_run_is_removing(sample_dir, tmp_path, monkeypatch):
    """Found by the review of 2026-12-08: the sources' folders an earlier run left were removed before its
    mixture.json, so a run killed between them left a mixture naming a folder that was gone."""
    from spark_stages.outputs import record_written

    shards = tmp_path / "out" / "shards"
    record_written(shards, ["mixture.json", "web", "zh"])
    for name in ("web", "zh"):
        (shards / name).mkdir()
    (shards / "mixture.json").write_text("an earlier run's, naming web and zh")

    def killed(*_):
        raise KeyboardInterrupt("killed as the first folder is cleared")

    monkeypatch.setattr(pipeline, "replace_layout", killed)
    with pytest.raises(KeyboardInterrupt):
        pipeline._per_source_folders(tmp_path / "out", {"web": expand_inputs(str(sample_dir))}, pipeline.Config())
    assert not (shards / "mixture.json").exists()
