"""prep/classify/fasttext_bin.py: models written and read back as they were (the pruned form and the whole
one fastText loads), and a model file treated as a file from elsewhere: truncated anywhere, crafted in each
size it declares, or fuzzed, it is a model or a ModelError naming the file, and what the file claims is
never allocated (measured with tracemalloc, which sees NumPy's allocations)."""

import itertools
import math
import shutil
import struct
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.classify import fasttext_bin
from prep.classify.classifier import Classifier
from prep.classify.fasttext_bin import LABEL_PREFIX, ModelError, SupervisedModel
from prep.classify.predict import Scorer
from prep.classify.text import model_line
from prep.classify.train import TrainConfig, train
from tests.shard_fixtures import sample_texts

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMIT = 4 << 20  # the most a read of a small file may allocate, whatever it claims
# Offsets of the header's fields (fastText's Args::save, then Dictionary::save's sizes)
MAGIC, VERSION, DIM, WORD_NGRAMS, LOSS, KIND, BUCKET, MAXN = 0, 4, 8, 28, 32, 36, 40, 48
SIZE, NWORDS, NLABELS, PRUNED, ENTRIES = 64, 68, 72, 84, 92


@pytest.fixture(scope="module")
def tiny() -> SupervisedModel:
    """A model of the beginnings of a few real documents in English and Chinese: a file of two kilobytes."""
    en, zh = sample_texts(["debian-handbook.en"])[:3], sample_texts(["debian-handbook.zh"])[:3]
    lines = [model_line(text[:120], 12) for text in en + zh]
    return train(lines, ["en"] * 3 + ["zh"] * 3, TrainConfig(dim=2, bucket=64, max_tokens=12))[0]


@pytest.fixture(scope="module")
def files(tiny, tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("tiny")
    fasttext_bin.write(tiny, str(folder / "pruned.bin"))
    fasttext_bin.write(tiny, str(folder / "whole.bin"), whole=True)
    return {form: (folder / f"{form}.bin").read_bytes() for form in ("pruned", "whole")}


def layout(model: SupervisedModel, whole: bool) -> dict[str, int]:
    """Where the matrices' headers and rows begin in the file of `model`."""
    at = ENTRIES + sum(len(w) + 10 for w in model.words)
    at += sum(len(LABEL_PREFIX) + len(label.encode()) + 10 for label in model.labels)
    at += 0 if whole else 8 * len(model.kept_buckets)
    rows = len(model.words) + (model.bucket if whole else len(model.kept_buckets))
    output = at + 17 + rows * model.dim * 4
    return {"pairs": at - 8 * len(model.kept_buckets), "input": at, "input_rows": at + 1, "input_cols": at + 9,
            "input_data": at + 17, "output": output, "output_rows": output + 1, "output_data": output + 17}


def patched(data: bytes, at: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, *values)
    return bytes(out)


def read_within_budget(path: Path) -> SupervisedModel:
    """fasttext_bin.read, failing the test if it allocates more than LIMIT and a few times the file's own size
    (it is read whole, its words are objects: what it holds may be allocated, what it claims may not)."""
    budget = LIMIT + 8 * (path.stat().st_size if path.is_file() else 0)
    tracemalloc.start()
    try:
        return fasttext_bin.read(str(path))
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < budget, f"reading {path} allocated {peak} bytes"


def same(a: SupervisedModel, b: SupervisedModel) -> None:
    assert a.words == b.words and a.labels == b.labels
    for name in ("word_counts", "label_counts", "kept_buckets", "input", "output"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.word_ngrams, a.bucket, a.dim, a.epoch, a.lr_update_rate, a.tokens) == \
        (b.word_ngrams, b.bucket, b.dim, b.epoch, b.lr_update_rate, b.tokens)


def test_a_model_written_is_read_back_as_it_was(prose_model, tmp_path):
    fasttext_bin.write(prose_model, str(tmp_path / "model.bin"))
    back = fasttext_bin.read(str(tmp_path / "model.bin"))
    same(back, prose_model)
    assert len(prose_model.kept_buckets) < prose_model.bucket  # pruned: only the buckets training saw
    fasttext_bin.write(back, str(tmp_path / "again.bin"))
    assert (tmp_path / "again.bin").read_bytes() == (tmp_path / "model.bin").read_bytes()


def test_the_whole_form_has_a_row_for_every_bucket_and_scores_the_same(prose_model, prose_junk, tmp_path):
    fasttext_bin.write(prose_model, str(tmp_path / "whole.bin"), whole=True)
    whole = fasttext_bin.read(str(tmp_path / "whole.bin"))
    words = len(prose_model.words)
    assert np.array_equal(whole.kept_buckets, np.arange(prose_model.bucket))
    assert whole.input.shape == (words + prose_model.bucket, prose_model.dim)
    assert np.array_equal(whole.input[:words], prose_model.input[:words])
    assert np.array_equal(whole.input[words + prose_model.kept_buckets], prose_model.input[words:])
    unseen = np.setdiff1d(np.arange(prose_model.bucket), prose_model.kept_buckets)
    assert len(unseen) and not whole.input[words + unseen].any()
    lines = prose_junk.held_lines
    assert np.array_equal(Scorer(whole).probabilities(lines), Scorer(prose_model).probabilities(lines))


def test_a_model_read_does_not_depend_on_its_file_any_more(files, tiny, tmp_path):
    """A model read is its own: its file rewritten (here with the model itself, read from it) or removed
    changes nothing; it was once mapped, and writing a model read from a path back to it crashed (SIGBUS)
    or wrote the output matrix from the bytes just written."""
    path = tmp_path / "model.bin"
    for form, whole in (("pruned", False), ("whole", True)):
        path.write_bytes(files[form])
        code = ("import sys; from prep.classify import fasttext_bin as f; "
                f"f.write(f.read(sys.argv[1]), sys.argv[1], whole={whole})")
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[3])
        assert done.returncode == 0, (form, done.returncode, done.stderr[-2000:])
        assert path.read_bytes() == files[form]
    path.write_bytes(files["pruned"])
    model = fasttext_bin.read(str(path))
    path.unlink()
    same(model, tiny)


@pytest.mark.parametrize("form", ["pruned", "whole"])
def test_every_truncation_is_a_model_error_naming_the_file(files, tiny, form, tmp_path):
    """Cut at every byte of the header, the dictionary and the matrices' headers, and at every 7th byte of
    the weights."""
    data = files[form]
    rows = layout(tiny, form == "whole")
    path = tmp_path / "cut.bin"
    ends = [*range(rows["input_data"] + 1), *range(rows["input_data"], rows["output"], 7),
            *range(rows["output"], rows["output_data"] + 1), *range(rows["output_data"], len(data), 7), len(data) - 1]
    for end in ends:
        path.write_bytes(data[:end])
        with pytest.raises(ModelError, match=str(path)):
            read_within_budget(path)


def crafted_cases():
    """(name, form, the file's bytes from the model's, what the message says)."""
    def header(at, fmt, value):
        return lambda data, _layout: patched(data, at, fmt, value)

    def at_layout(where, fmt, value):
        return lambda data, spots: patched(data, spots[where], fmt, value)

    def label_byte(data, _layout):
        at = data.index(LABEL_PREFIX) + len(LABEL_PREFIX)
        return data[:at] + b"\xff" + data[at + 1:]

    def pairs(edit):
        def make(data, spots):
            found = np.frombuffer(data, "<i4", 2 * 3, spots["pairs"]).reshape(3, 2).copy()
            edit(found)
            return data[:spots["pairs"]] + found.tobytes() + data[spots["pairs"] + found.nbytes:]
        return make

    def swap(p):
        p[[0, 1], 0] = p[[1, 0], 0]

    return [
        ("magic", "pruned", header(MAGIC, "<i", 12345), "not a fastText model"),
        ("version 11", "pruned", header(VERSION, "<i", 11), "version 11"),
        ("version 13", "whole", header(VERSION, "<i", 13), "version 13"),
        ("dim 2^31 - 1", "pruned", header(DIM, "<i", 2**31 - 1), "out of bounds"),
        ("dim within bounds, not the file's", "whole", header(DIM, "<i", 1024), "input matrix"),
        ("dim 0", "pruned", header(DIM, "<i", 0), "out of bounds"),
        ("word n-grams 0", "pruned", header(WORD_NGRAMS, "<i", 0), "out of bounds"),
        ("word n-grams 2^31 - 1", "pruned", header(WORD_NGRAMS, "<i", 2**31 - 1), "out of bounds"),
        ("hierarchical softmax", "pruned", header(LOSS, "<i", 1), "not a model tokenmill trains"),
        ("a word vector model", "pruned", header(KIND, "<i", 2), "not a model tokenmill trains"),
        ("character n-grams", "whole", header(MAXN, "<i", 6), "not a model tokenmill trains"),
        ("buckets 0 with word bigrams", "pruned", header(BUCKET, "<i", 0), "out of bounds"),
        ("buckets negative", "pruned", header(BUCKET, "<i", -16), "out of bounds"),
        ("buckets 2^31 - 1, each with a row", "whole", header(BUCKET, "<i", 2**31 - 1), "rows x 2 labels: past"),
        ("entries 2^31 - 1", "pruned", header(SIZE, "<i", 2**31 - 1), "bad dictionary sizes"),
        ("labels 2^31 - 1", "pruned", header(NLABELS, "<i", 2**31 - 1), "bad dictionary sizes"),
        ("words past the file", "pruned",
         lambda data, _: patched(data, SIZE, "<3i", 2**31 - 2, 2**31 - 4, 2), "truncated"),
        ("pruned buckets 2^40", "pruned", header(PRUNED, "<q", 2**40), "bad dictionary sizes"),
        ("pruned buckets below -1", "pruned", header(PRUNED, "<q", -2), "bad dictionary sizes"),
        ("pruned buckets past the file", "pruned",
         lambda data, _: patched(patched(data, BUCKET, "<i", 2**31 - 1), PRUNED, "<q", 2**31 - 2), "truncated"),
        ("input rows 2^40", "pruned", at_layout("input_rows", "<q", 2**40), "input matrix"),
        ("input columns 2^40", "whole", at_layout("input_cols", "<q", 2**40), "input matrix"),
        ("input rows negative", "pruned", at_layout("input_rows", "<q", -1), "input matrix"),
        ("output rows 2^40", "pruned", at_layout("output_rows", "<q", 2**40), "output matrix"),
        ("a quantized input matrix", "pruned", at_layout("input", "<?", True), "quantized input"),
        ("a quantized output matrix", "whole", at_layout("output", "<?", True), "quantized output"),
        ("a NaN weight", "pruned", at_layout("input_data", "<f", float("nan")), "not a finite number"),
        ("an infinite weight", "whole", at_layout("output_data", "<f", float("-inf")), "not a finite number"),
        ("bytes after the model", "pruned", lambda data, _: data + b"\0\0\0", "3 bytes after the model"),
        ("a label not UTF-8", "pruned", label_byte, "not UTF-8"),
        ("a label without __label__", "pruned", lambda data, _: data.replace(b"__label__zh", b"__lobel__zh"),
         "without __label__"),
        ("a label among the words", "pruned",
         lambda data, _: patched(data, data.index(b"\0", ENTRIES) + 9, "<b", 1), "labels must follow"),
        ("pruned buckets out of order", "pruned", pairs(swap), "out of order"),
        ("a pruned bucket past the buckets", "pruned", pairs(lambda p: p.__setitem__((2, 0), 64)), "out of range"),
        ("a pruned bucket negative", "pruned", pairs(lambda p: p.__setitem__((0, 0), -1)), "out of range"),
        ("a pruned bucket's row elsewhere", "pruned", pairs(lambda p: p.__setitem__((1, 1), 2)), "out of order"),
    ]


@pytest.mark.parametrize("name, form, make, message", crafted_cases(), ids=[c[0] for c in crafted_cases()])
def test_a_crafted_model_is_a_model_error(files, tiny, tmp_path, name, form, make, message):
    path = tmp_path / "crafted.bin"
    data = files[form]
    path.write_bytes(make(data, layout(tiny, form == "whole")))
    assert path.read_bytes() != data, name
    with pytest.raises(ModelError, match=str(path)) as found:
        read_within_budget(path)
    assert message in str(found.value), str(found.value)


def test_entries_a_model_cannot_hold(tiny, tmp_path):
    """Entries tokenmill never writes, written here by hand: a word without its end within the bytes a
    word may have, an entry given twice."""
    cases = {"a word without its end": tiny.words[:1] + [b"x" * 5000] + tiny.words[2:],
             "given twice": tiny.words[:1] + tiny.words[:1] + tiny.words[2:]}
    for message, words in cases.items():
        model = SupervisedModel(words, tiny.word_counts, tiny.labels, tiny.label_counts, tiny.word_ngrams,
                                tiny.bucket, tiny.kept_buckets, tiny.input, tiny.output)
        fasttext_bin.write(model, str(tmp_path / "model.bin"))
        with pytest.raises(ModelError, match=message):
            read_within_budget(tmp_path / "model.bin")


def test_what_is_not_a_model_file_is_a_model_error(tmp_path):
    (tmp_path / "empty.bin").write_bytes(b"")
    (tmp_path / "text.bin").write_bytes(Path(__file__).read_bytes())
    (tmp_path / "folder").mkdir()
    for name in ("empty.bin", "text.bin", "folder", "missing.bin"):
        with pytest.raises(ModelError, match=str(tmp_path / name)):
            read_within_budget(tmp_path / name)


def test_a_crafted_bucket_count_is_not_allocated_when_scored(files, tmp_path):
    """A small pruned model claiming 2^31 - 1 buckets is a model (its buckets are in range), and scoring it
    allocates by the rows it has, not by the buckets it claims."""
    path = tmp_path / "wide.bin"
    path.write_bytes(patched(files["pruned"], BUCKET, "<i", 2**31 - 1))
    model = read_within_budget(path)
    assert model.bucket == 2**31 - 1
    lines = [model_line(text, 12) for text in sample_texts(["debian-handbook.en"])[4:40]]
    tracemalloc.start()
    try:
        probabilities = Classifier(model, str(path)).scorer.probabilities(lines)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 64 << 20, f"scoring allocated {peak} bytes"
    assert probabilities.shape == (len(lines), 2) and np.isfinite(probabilities).all()



def test_a_small_model_of_many_rows_and_many_labels_is_a_model_error_not_gigabytes_of_outputs(tmp_path):
    """Each size in bounds and held by the file (3.5 MB: one word, 250,000 kept buckets of dimension 1,
    10,000 labels), yet a scorer's table of each row's output per label would be 250,001 x 10,000 numbers
    (it asked for 18.6 GiB)."""
    kept, labels = 250_000, 10_000
    model = SupervisedModel(words=[b"</s>"], word_counts=np.ones(1, np.int64),
                            labels=[f"l{i}" for i in range(labels)], label_counts=np.ones(labels, np.int64),
                            word_ngrams=2, bucket=2**31 - 1, kept_buckets=np.arange(kept, dtype=np.int32),
                            input=np.full((1 + kept, 1), 0.5, np.float32),
                            output=np.full((labels, 1), 0.5, np.float32))
    path = tmp_path / "outputs.bin"
    fasttext_bin.write(model, str(path))
    assert path.stat().st_size < 4 << 20
    with pytest.raises(ModelError, match=r"outputs\.bin: 250,001 rows x 10,000 labels: past"):
        Classifier.load(str(path))

# ---- fuzzed: bytes flipped, inserted, deleted, fields set to telling values ----

EDIT = st.one_of(
    st.tuples(st.sampled_from(["flip", "insert", "delete"]), st.integers(0, 128) | st.integers(0, 1 << 20),
              st.integers(0, 255)),
    st.tuples(st.just("int32"), st.integers(0, (PRUNED - 4) // 4).map(lambda k: 4 * k),
              st.sampled_from([0, 1, -1, 2, 16, 255, 1024, 2**16, 2**31 - 1, -(2**31)])),
)


def edited(data: bytes, edits) -> bytes:
    out = bytearray(data)
    for op, at, value in edits:
        if op == "int32":
            struct.pack_into("<i", out, at, value)
        elif op == "insert":
            out.insert(at % (len(out) + 1), value)
        elif out:
            at %= len(out)
            if op == "flip":
                out[at] ^= value or 1
            else:
                del out[at]
    return bytes(out)


def test_fuzzed_models_are_models_or_model_errors(files):
    lines = [model_line(text, 12) for text in sample_texts(["debian-handbook.zh"])[4:10]] + ["", "x"]
    folder = Path(tempfile.mkdtemp(prefix="fuzzed-model-"))
    path = folder / "model.bin"
    read_models = []

    @FUZZ
    @given(st.sampled_from(["pruned", "whole"]), st.lists(EDIT, min_size=1, max_size=4))
    def check(form, edits):
        path.write_bytes(edited(files[form], edits))
        try:
            model = read_within_budget(path)
        except ModelError as e:
            assert str(path) in str(e)
            return
        read_models.append(form)
        try:
            classifier = Classifier(model, str(path))
        except ModelError as e:
            assert str(path) in str(e)
            return
        assert classifier.scorer.probabilities(lines).shape == (len(lines), len(model.labels))

    try:
        check()
    finally:
        shutil.rmtree(folder)
    assert read_models, "some edits (a weight's byte flipped) leave a model"


def test_finite_weights_whose_products_pass_float32_are_a_model_error(tiny, tmp_path):
    """Rows and outputs of 1e20: every weight finite, each row's output not (inf in float32), and every
    probability NaN, which passes every threshold (NaN < min_score is false)."""
    model = SupervisedModel(tiny.words, tiny.word_counts, tiny.labels, tiny.label_counts, tiny.word_ngrams,
                            tiny.bucket, tiny.kept_buckets, np.full_like(tiny.input, 1e20),
                            np.array([[1e20] * tiny.dim, [-1e20] * tiny.dim], np.float32))
    fasttext_bin.write(model, str(tmp_path / "model.bin"))
    with pytest.raises(ModelError, match="not finite in float32"):
        Classifier.load(str(tmp_path / "model.bin"))


def test_more_outputs_than_the_file_has_bytes_are_a_model_error(tmp_path):
    """60,000 words of dimension 1 and 2,000 labels, a file of about 1.3 MB: the outputs a scorer keeps (a number
    per row and label) are 120 million; at 10,000 labels a file of 795 KB took 3.1 GB."""
    words, labels = [b"w%d" % i for i in range(60_000)], [str(i) for i in range(2000)]
    model = SupervisedModel(words, np.ones(len(words), np.int64), labels, np.ones(len(labels), np.int64), 1, 0,
                            np.zeros(0, np.int32), np.ones((len(words), 1), np.float32),
                            np.ones((len(labels), 1), np.float32))
    fasttext_bin.write(model, str(tmp_path / "wide.bin"))
    assert (tmp_path / "wide.bin").stat().st_size < 2_000_000
    with pytest.raises(ModelError, match="60,000 rows x 2,000 labels: past the outputs a scorer holds"):
        read_within_budget(tmp_path / "wide.bin")


def colliding_words(bits: int, count: int) -> list[bytes]:
    """`count` words whose FNV-1a hashes (fastText's) agree in their low `bits` bits: each hash step's low bits
    follow the low bits before it and the byte, so the words are runs of 3-byte blocks, each block one of those
    that take the hash's low bits from where the run so far left them to one same place."""
    mask, prime = (1 << bits) - 1, 16777619 & ((1 << bits) - 1)
    blocks = np.array(list(itertools.product(range(0x61, 0x7B), repeat=3)), np.int64)
    state, groups = 2166136261 & mask, []
    while not groups or math.prod(len(g) for g in groups) < count:
        h = np.full(len(blocks), state, np.int64)
        for k in range(3):
            h = ((h ^ blocks[:, k]) * prime) & mask
        state = int(np.bincount(h).argmax())
        groups.append(blocks[h == state])
    return [bytes(np.concatenate(run).astype(np.uint8)) for run in itertools.islice(itertools.product(*groups), count)]


def test_words_made_to_collide_in_the_dictionary_s_table_are_a_model_error(tmp_path):
    """2,866 words all in one slot of the table's 4,096 (made from FNV-1a's low bits): building the table looked
    at the square of their number (45,874 such words took 7 s), and each lookup of a word not in the model
    walked the run; words of the same lengths drawn at random are a model."""
    count = 2866  # the table is ceil(count / 0.7) + 1 = 4,096 slots: a word's slot is its hash's low 12 bits
    collide = colliding_words(12, count)
    rng = np.random.default_rng(0)
    drawn = list(dict.fromkeys(bytes(rng.integers(0x61, 0x7B, len(collide[0])).astype(np.uint8))
                               for _ in range(count + 100)))[:count]
    for name, words in (("collide", collide), ("drawn", drawn)):
        model = SupervisedModel(words, np.ones(count, np.int64), ["a", "b"], np.ones(2, np.int64), 1, 0,
                                np.zeros(0, np.int32), np.ones((count, 1), np.float32),
                                np.array([[1], [-1]], np.float32))
        fasttext_bin.write(model, str(tmp_path / f"{name}.bin"))
    assert Classifier.load(str(tmp_path / "drawn.bin")).probabilities(["some words"]).shape == (1, 2)
    with pytest.raises(ModelError, match="words made to collide in its dictionary's table"):
        Classifier.load(str(tmp_path / "collide.bin"))


def test_a_model_written_over_another_leaves_a_reader_of_the_old_one_all_of_it(files, tiny, tmp_path):
    """A model is written to a name of its own and renamed over the old: written in place, a reader of the
    old file (mapped, as it was then read) died of SIGBUS when the file was cut short under it."""
    path = tmp_path / "model.bin"
    path.write_bytes(files["whole"])
    with open(path, "rb") as reader:
        fasttext_bin.write(tiny, str(path))  # the pruned form, a smaller file
        assert reader.read() == files["whole"]
    assert path.read_bytes() == files["pruned"] and [p.name for p in tmp_path.iterdir()] == ["model.bin"]
