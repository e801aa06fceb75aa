"""prep/classify/scoring.py (and classifier.py under it): the classifiers of a configuration with their models
trained here on the labelled set: score_NAME on real documents, label_NAME for more than two labels, the
ensembles, the rules' reasons, and every configuration or model file that cannot be used refused with a
ValueError naming the classifier."""

import dataclasses
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.classify import fasttext_bin
from prep.classify.classifier import Classifier
from prep.classify.predict import Scorer
from prep.classify.scoring import ClassifierConfig, Classifiers, bucket_column, score_column
from prep.classify.text import TEXT_FORM, model_line
from prep.classify.train import train
from tests.prep.classify.conftest import MAX_TOKENS, SETTINGS
from tests.shard_fixtures import SAMPLE


@pytest.fixture(scope="module")
def models(prose_model, three_kind_model, prose_junk, tmp_path_factory) -> dict[str, str]:
    """Model files: prose against junk, the same from another random start, prose / menus / tables."""
    folder = tmp_path_factory.mktemp("models")
    other = train(prose_junk.train_lines, prose_junk.train_labels, dataclasses.replace(SETTINGS, init_seed=7))[0]
    paths = {}
    for name, model in (("quality", prose_model), ("other", other), ("kinds", three_kind_model)):
        paths[name] = str(folder / f"{name}.bin")
        fasttext_bin.write(model, paths[name])
    return paths


@pytest.fixture(scope="module")
def texts(prose_junk) -> list[str]:
    return prose_junk.held_texts


def test_a_classifier_adds_its_score(models, prose_model, prose_junk, texts):
    classifiers = Classifiers({"quality": ClassifierConfig(model=models["quality"], label="prose")})
    assert classifiers.fields() == [pa.field("score_quality", pa.float32())]
    columns = classifiers.scores(texts)
    assert list(columns) == ["score_quality"] and columns["score_quality"].dtype == np.float32
    expected = Scorer(prose_model).probabilities([model_line(t, MAX_TOKENS) for t in texts])
    assert np.array_equal(columns["score_quality"], expected[:, prose_model.labels.index("prose")])
    prose = np.array(prose_junk.held_labels) == "prose"
    assert columns["score_quality"][prose].mean() > 0.8 > 0.2 > columns["score_quality"][~prose].mean()
    # the other label of the same model: the rest of the probability
    junk = Classifiers({"junk": ClassifierConfig(model=models["quality"], label="junk")}).scores(texts)["score_junk"]
    assert np.allclose(junk + columns["score_quality"], 1, atol=1e-5)


def test_no_texts_no_scores(models):
    classifiers = Classifiers({"kinds": ClassifierConfig(model=models["kinds"], label="prose"),
                               "both": ClassifierConfig(combine="max", of=["kinds"])})
    columns = classifiers.scores([])
    assert [len(v) for v in columns.values()] == [0, 0, 0, 0]
    assert set(columns) == {"score_kinds", "label_kinds", "label_score_kinds", "score_both"}


def test_a_label_the_model_lacks_names_the_classifier_and_the_models_labels(models, prose_model):
    with pytest.raises(ValueError) as found:
        Classifiers({"quality": ClassifierConfig(model=models["quality"], label="good")})
    message = str(found.value)
    assert message.startswith("classifier quality: ") and models["quality"] in message and "'good'" in message
    assert f"its labels: {', '.join(prose_model.labels)}" in message
    with pytest.raises(ValueError, match="classifier kinds: .*no label 'law'"):
        Classifiers({"kinds": ClassifierConfig(model=models["kinds"], label="prose", keep_labels=["prose", "law"])})


def test_a_label_a_model_of_thousands_lacks_is_one_short_line(tmp_path):
    """Found by review: a model of 10,000 labels of 1,000 bytes (10 MB), asked for a label it lacks, gave a
    message of 10 million characters, printed as the job's one line."""
    labels = ["line\nbreak"] + [f"{i:05d}" + "x" * 995 for i in range(1, 2_000)]  # and a label of two lines
    model = fasttext_bin.SupervisedModel(
        words=[b"good", b"</s>"], word_counts=np.ones(2, np.int64), labels=labels,
        label_counts=np.ones(len(labels), np.int64), word_ngrams=1, bucket=0, kept_buckets=np.zeros(0, np.int32),
        input=np.ones((2, 1), np.float32), output=np.ones((len(labels), 1), np.float32))
    fasttext_bin.write(model, str(tmp_path / "many.bin"))
    for config in (ClassifierConfig(model=str(tmp_path / "many.bin"), label="good"),
                   ClassifierConfig(model=str(tmp_path / "many.bin"), label=labels[1], keep_labels=["law"])):
        with pytest.raises(ValueError) as found:
            Classifiers({"q": config})
        message = str(found.value)
        assert len(message) < 2_000 and "2000 labels" in message and "00001xxx" in message and "\n" not in message


def test_classifiers_whose_columns_would_be_one_are_refused(models):
    """Found by review: `x` and `score_x` on models of three labels both made label_score_x, a number and a
    string: every cleaning task failed at its write."""
    with pytest.raises(ValueError, match="label_score_x would be a column of two classifiers"):
        Classifiers({"x": ClassifierConfig(model=models["kinds"], label="prose"),
                     "score_x": ClassifierConfig(model=models["kinds"], label="prose")})
    with pytest.raises(ValueError, match="label_score_x would be a column of two classifiers"):  # keep_labels
        Classifiers({"x": ClassifierConfig(model=models["quality"], label="prose", keep_labels=["prose"]),
                     "score_x": ClassifierConfig(model=models["kinds"], label="prose")})


@pytest.mark.parametrize("name", ["", "a\nb", "q\x00", "q" * 101, "q.v", "q v", "q`", "_q", "é"])
def test_a_classifier_name_that_cannot_name_a_column_everywhere_is_refused(models, name):
    with pytest.raises(ValueError, match="classifier .*: a name is letters, digits"):
        Classifiers({name: ClassifierConfig(model=models["quality"], label="prose")})


@pytest.mark.parametrize("which", ["sample data", "missing", "truncated", "folder"])
def test_a_file_that_is_not_a_model_names_the_classifier_and_the_file(models, tmp_path, which):
    path = {"sample data": str(SAMPLE / "debian-faq.en.jsonl.zst"), "missing": str(tmp_path / "none.bin"),
            "truncated": str(tmp_path / "cut.bin"), "folder": str(tmp_path)}[which]
    with open(models["quality"], "rb") as f:
        (tmp_path / "cut.bin").write_bytes(f.read()[:-1000])
    with pytest.raises(ValueError, match=f"^classifier quality: {re.escape(path)}: "):
        Classifiers({"quality": ClassifierConfig(model=path, label="prose")})


def test_an_ensemble_is_the_mean_or_max_of_its_members(models, texts):
    members = {"quality": ClassifierConfig(model=models["quality"], label="prose"),
               "other": ClassifierConfig(model=models["other"], label="prose")}
    classifiers = Classifiers({**members, "mean": ClassifierConfig(combine="mean", of=["quality", "other"]),
                               "max": ClassifierConfig(combine="max", of=["other", "quality"])})
    columns = classifiers.scores(texts)
    a, b = columns["score_quality"], columns["score_other"]
    assert not np.array_equal(a, b)  # two models: the ensemble has something to do
    assert np.array_equal(columns["score_mean"], ((a + b) / 2).astype(np.float32))
    assert np.array_equal(columns["score_max"], np.maximum(a, b))
    assert [f.name for f in classifiers.fields()] == ["score_quality", "score_other", "score_mean", "score_max"]


def test_min_score_rejects_under_it_with_the_classifiers_name(models, texts):
    classifiers = Classifiers({"quality": ClassifierConfig(model=models["quality"], label="prose", min_score=0.5)})
    columns = classifiers.scores(texts)
    reasons = [classifiers.rejection(columns, i) for i in range(len(texts))]
    under = columns["score_quality"] < 0.5
    assert 0 < under.sum() < len(texts)
    assert reasons == ["classifier:quality" if u else None for u in under]


def test_an_ensembles_min_score_reads_the_combined_score(models, texts):
    classifiers = Classifiers({"quality": ClassifierConfig(model=models["quality"], label="prose"),
                               "other": ClassifierConfig(model=models["other"], label="prose"),
                               "both": ClassifierConfig(combine="mean", of=["quality", "other"], min_score=0.5)})
    columns = classifiers.scores(texts)
    reasons = [classifiers.rejection(columns, i) for i in range(len(texts))]
    assert reasons == ["classifier:both" if s < 0.5 else None for s in columns["score_both"]]


def test_a_model_of_three_labels_adds_the_best_label(models, three_kind_model, three_kinds):
    texts = three_kinds.held_texts
    classifiers = Classifiers({"kinds": ClassifierConfig(model=models["kinds"], label="prose")})
    assert sorted(three_kind_model.labels) == ["navigation_menu", "number_table", "prose"]
    assert classifiers.fields() == [pa.field("score_kinds", pa.float32()), pa.field("label_kinds", pa.string()),
                                    pa.field("label_score_kinds", pa.float32())]
    columns = classifiers.scores(texts)
    probabilities = Classifier.load(models["kinds"]).probabilities(texts)
    assert columns["label_kinds"] == [three_kind_model.labels[i] for i in probabilities.argmax(axis=1)]
    assert np.allclose(columns["label_score_kinds"], probabilities.max(axis=1))
    assert (columns["label_score_kinds"] > 1 / 3).all()
    assert np.mean([a == b for a, b in zip(columns["label_kinds"], three_kinds.held_labels)]) > 0.9
    assert set(columns["label_kinds"]) == set(three_kind_model.labels)
    # two labels: no label column
    two = Classifiers({"quality": ClassifierConfig(model=models["quality"], label="prose")})
    assert "label_quality" not in two.scores(texts)


def test_keep_labels_rejects_the_other_labels(models, three_kinds):
    texts = three_kinds.held_texts
    classifiers = Classifiers({"kinds": ClassifierConfig(model=models["kinds"], label="prose",
                                                         keep_labels=["prose", "number_table"])})
    columns = classifiers.scores(texts)
    reasons = [classifiers.rejection(columns, i) for i in range(len(texts))]
    assert reasons == [None if label in ("prose", "number_table") else "classifier:kinds"
                       for label in columns["label_kinds"]]
    assert reasons.count("classifier:kinds") > 10
    # keep_labels on a model of two labels: the label column is added for it
    two = Classifiers({"quality": ClassifierConfig(model=models["quality"], label="prose", keep_labels=["prose"])})
    assert [f.name for f in two.fields()] == ["score_quality", "label_quality", "label_score_quality"]


def test_the_first_classifier_in_the_configuration_gives_the_reason(models, texts):
    classifiers = Classifiers({"other": ClassifierConfig(model=models["other"], label="prose", min_score=0.5),
                               "quality": ClassifierConfig(model=models["quality"], label="prose", min_score=0.5)})
    columns = classifiers.scores(texts)
    for i in range(len(texts)):
        expected = ("classifier:other" if columns["score_other"][i] < 0.5 else
                    "classifier:quality" if columns["score_quality"][i] < 0.5 else None)
        assert classifiers.rejection(columns, i) == expected


@pytest.mark.parametrize("configs, message", [
    ({"q": ClassifierConfig(model="m.bin")}, "give a model and the label"),
    ({"q": ClassifierConfig(label="prose")}, "give a model and the label"),
    ({"q": ClassifierConfig(combine="mean")}, "give a model and the label"),
    ({"q": ClassifierConfig(of=["a"])}, "give a model and the label"),
    ({"q": ClassifierConfig(combine="max", of=["nobody"])}, "combines 'nobody'"),
    ({"q": ClassifierConfig(combine="max", of=["r"]), "r": ClassifierConfig(combine="mean", of=["q"])},
     "which is not a classifier with a model"),
    ({"q": ClassifierConfig(combine="max", of=["q"], keep_labels=["prose"])}, "combines 'q'"),
])
def test_a_configuration_that_cannot_be_used_is_refused(configs, message):
    with pytest.raises(ValueError, match=message):
        Classifiers(configs)


def test_keep_labels_needs_a_model_of_its_own(models):
    with pytest.raises(ValueError, match="keep_labels needs a model of its own"):
        Classifiers({"quality": ClassifierConfig(model=models["quality"], label="prose"),
                     "e": ClassifierConfig(combine="mean", of=["quality"], keep_labels=["prose"])})


@pytest.mark.parametrize("settings", [{"combine": "median"}, {"keep_top": 0.0}, {"keep_top": 1.5},
                                      {"buckets": 1}, {"buckets": -2}])
def test_settings_out_of_bounds(settings):
    with pytest.raises(ValueError):
        ClassifierConfig(model="m.bin", label="x", **settings)


def test_the_rules_over_the_corpus(models):
    configs = {"quality": ClassifierConfig(model=models["quality"], label="prose", keep_top=0.3),
               "other": ClassifierConfig(model=models["other"], label="prose", min_score=0.2),
               "both": ClassifierConfig(combine="mean", of=["quality", "other"], buckets=20)}
    assert list(Classifiers(configs).global_rules()) == ["quality", "both"]
    assert score_column("both") == "score_both" and bucket_column("both") == "bucket_both"
    assert not Classifiers({}) and Classifiers(configs)


# ---- the text a model reads: its text form's mark ----

def with_words(model, words):
    return dataclasses.replace(model, words=words)


def test_a_model_reads_the_text_form_it_was_trained_on(prose_junk, tmp_path):
    """The mark in its vocabulary says how many tokens: a model trained on 32 reads 32."""
    lines = [model_line(t, 32) for t in prose_junk.train_texts]
    model = train(lines, prose_junk.train_labels, dataclasses.replace(SETTINGS, max_tokens=32))[0]
    assert model.words[-1] == f"{TEXT_FORM}:32".encode()
    fasttext_bin.write(model, str(tmp_path / "m.bin"))
    classifier = Classifier.load(str(tmp_path / "m.bin"))
    texts = prose_junk.held_texts
    assert classifier.max_tokens == 32
    assert np.array_equal(classifier.probabilities(texts),
                          Scorer(model).probabilities([model_line(t, 32) for t in texts]))


def test_a_model_without_the_mark_reads_text_as_dclm_gave_it_to_fasttext(prose_model, prose_junk, tmp_path):
    words = [w if not w.startswith(TEXT_FORM.encode()) else b"unmarked" for w in prose_model.words]
    fasttext_bin.write(with_words(prose_model, words), str(tmp_path / "m.bin"))
    classifier = Classifier.load(str(tmp_path / "m.bin"))
    assert classifier.max_tokens is None
    texts = prose_junk.held_texts[:50]
    assert classifier.line("Two  words\n\nand\tmore ") == "Two words and more"
    assert np.array_equal(classifier.probabilities(texts),
                          Scorer(prose_model).probabilities([" ".join(t.split()) for t in texts]))


MARKS = [f"{TEXT_FORM}:many", f"{TEXT_FORM}:", f"{TEXT_FORM}:0", f"{TEXT_FORM}:-5", "⟨tokenmill:text-0⟩:256",
         "⟨tokenmill:text-2⟩:1024"]


@pytest.mark.parametrize("mark", [m.encode() for m in MARKS] + [TEXT_FORM.encode() + b":\xff"], ids=MARKS + ["xff"])
def test_a_mark_that_cannot_be_read_is_refused(prose_model, tmp_path, mark):
    """A mark of no number, of no tokens, or of a text form this tokenmill does not make: the model would
    read text otherwise than it was trained on (a mark of another form was taken for no mark at all)."""
    words = [w if not w.startswith(TEXT_FORM.encode()) else mark for w in prose_model.words]
    fasttext_bin.write(with_words(prose_model, words), str(tmp_path / "m.bin"))
    with pytest.raises(ValueError, match=f"classifier quality: {re.escape(str(tmp_path / 'm.bin'))}: .*text form"):
        Classifiers({"quality": ClassifierConfig(model=str(tmp_path / "m.bin"), label="prose")})


def test_the_score_step_reads_a_file_of_large_documents_in_batches_of_its_budget(models, texts, tmp_path,
                                                                                  monkeypatch, parquet_batch_bytes):
    """1,000 documents a batch was the score step's only bound: a file of large documents (a dictionary's string
    repeated in every row: a file of kilobytes) was a batch of their whole size. Now a row group is read in
    batches of about BATCH_BYTES by its sizes, as the ingestion readers read one, and every document is scored."""
    from spark_stages import score
    from spark_stages.task_outputs import prepare

    path = tmp_path / "docs.parquet"
    long = ["\n\n".join(texts[i::2] * 40)[:130_000] for i in range(2)]  # two long documents of real text
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(300)], "text": [long[i % 2] for i in range(300)]}),
                   path, compression="zstd")
    assert path.stat().st_size < 1 << 20 and len(long[0]) * 300 > 32 << 20
    monkeypatch.setattr(score, "BATCH_BYTES", 4 << 20)
    classifiers = Classifiers({"quality": ClassifierConfig(model=models["quality"], label="prose", min_score=0.5)})
    docs = pa.schema(list(pq.read_schema(path)) + classifiers.fields())
    schemas = {"docs": docs, "rejected": docs.append(pa.field("reason", pa.string()))}
    (tmp_path / "staging").mkdir()
    prepare(tmp_path / "staging", schemas)
    counts = score.score_file(path, 0, classifiers, tmp_path / "staging", schemas).to_pylist()
    assert sum(row["count"] for row in counts) == 300  # every document, kept or rejected
    # a batch of the budget (and the dictionary's two)
    assert max(parquet_batch_bytes) <= (4 << 20) + 2 * len(long[0]), parquet_batch_bytes


@pytest.mark.parametrize("settings, message", [
    # found by review: min_score 1.5 rejected every document without a word; buckets of 200,000 took 45 s on
    # 180 documents (a pass over the ranks each), 2**62 would never end
    ({"min_score": 1.5}, "min_score is a probability in [0, 1]"),
    ({"min_score": -0.1}, "min_score is a probability in [0, 1]"),
    ({"buckets": 1001}, "buckets must be 0 (none) or 2 to 1000"),
])
def test_a_rule_that_cannot_work_is_refused(settings, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ClassifierConfig(model="m.bin", label="good", **settings)
