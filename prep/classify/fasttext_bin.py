"""fastText's .bin format for the supervised models tokenmill trains: words and their word n-grams, a softmax
over the labels (version 12: fastText's arguments, its dictionary, the input and output matrices).

The n-gram buckets training saw have rows; the others are rows of zeros. tokenmill writes only the rows it
has, with the dictionary's list of pruned buckets (as fastText's own pruning does), a model of megabytes;
fastText itself loads a pruned dictionary only with a quantized matrix, so `write(..., whole=True)` writes
every bucket's row (the zeros too: the size of fastText's own models), which fastText's `load_model` reads
and whose `predict` gives tokenmill's scores (tests/prep/classify/test_train_predict.py). Both are read here, and
so is a model fastText trained (supervised, softmax, no character n-grams). A two-label classifier of
tokenmill's carries its second stage after fastText's model (prep/classify/mlp.py), where fastText does not
read.

A model file is a file from elsewhere: every size it declares is checked against the bytes the file still
holds before anything is allocated, and against the bounds below; a file that is not such a model, is
truncated or was crafted is a ModelError naming the file and what is wrong, never a crash or an
allocation of what it claims. The file is read whole (its own size: a map of it died of SIGBUS where the file
was cut short while read, as writing a model over it in place did), and written whole to a new name that then
replaces the old.
"""

import os
import secrets
import struct
from dataclasses import dataclass

import numpy as np

from prep.classify.mlp import SecondStage
from prep.classify.stats import NAMES
from schemas.trust import open_regular_file

MAGIC, VERSION = 793712314, 12
LOSS_SOFTMAX, MODEL_SUPERVISED = 3, 3
LABEL_PREFIX = b"__label__"
EOS = b"</s>"
MAX_DIM = 1024
MAX_LABELS = 10_000
MAX_WORD_BYTES = 1024  # a word longer than this is no word tokenmill writes
MAX_NGRAMS = 5
# a scorer keeps each row's output, a number per label (prep/classify/predict.py): rows x labels past this
# 1 GiB of float32) is no model of words and n-grams but a file made to exhaust memory; and past OUTPUTS_PER_BYTE
# of the file's bytes (or MIN_OUTPUTS), which a model reaches only with 64 times as many labels as dimensions
# (its input matrix alone is 4 bytes a row and dimension): a file of 795 KB (dimension 1, 10,000 labels) made 3.1 GB
MAX_OUTPUTS = 1 << 28
MIN_OUTPUTS, OUTPUTS_PER_BYTE = 1 << 22, 16
SECOND_STAGE = b"\0tokenmill:second-stage\0"  # after fastText's model: the second stage (prep/classify/mlp.py)
SECOND_STAGE_INPUTS = len(NAMES) + 1  # the document's statistics and the n-gram model's log-odds
# 2: the statistics of what a sentence's place says (unbalanced paragraphs, ...); 3: how much better the order
# of a document's sentences is than shuffles of them. An earlier second stage read fewer statistics, which
# this tokenmill no longer computes alone.
SECOND_STAGE_VERSION = 3
MAX_HIDDEN = 256


class ModelError(ValueError):
    """A file that is not a model tokenmill can use; the message names the file and the reason."""


@dataclass
class SupervisedModel:
    words: list[bytes]  # the vocabulary, "</s>" among them, in the order of the input matrix's rows
    word_counts: np.ndarray  # int64 [words]
    labels: list[str]  # without "__label__", in the order of the output matrix's rows
    label_counts: np.ndarray  # int64 [labels]
    word_ngrams: int  # n-grams of 1 to this many words feed the model
    bucket: int  # the n-gram hash space
    kept_buckets: np.ndarray  # int32, ascending: the buckets with a row (after the words' rows, in this order)
    input: np.ndarray  # float32 [words + kept buckets, dim]
    output: np.ndarray  # float32 [labels, dim]
    epoch: int = 5  # how it was trained (fastText's arguments, written as it writes them)
    lr_update_rate: int = 100
    tokens: int = 0  # tokens read in training
    second_stage: SecondStage | None = None  # a two-label classifier's second stage (prep/classify/mlp.py)
    positive: int = 0  # the label whose probability the second stage gives

    @property
    def dim(self) -> int:
        return self.input.shape[1]


def write(model: SupervisedModel, path: str, whole: bool = False) -> None:
    """The model in `path`: its rows and the list of its buckets, or (`whole`) a row for every bucket, as
    fastText itself loads it."""
    matrix = model.input
    if whole:
        matrix = np.zeros((len(model.words) + model.bucket, model.dim), np.float32)
        matrix[:len(model.words)] = model.input[:len(model.words)]
        matrix[len(model.words) + model.kept_buckets] = model.input[len(model.words):]
    out = [struct.pack("<2i", MAGIC, VERSION),
           struct.pack("<12i", model.dim, 5, model.epoch, 1, 5, model.word_ngrams, LOSS_SOFTMAX, MODEL_SUPERVISED,
                       model.bucket, 0, 0, model.lr_update_rate), struct.pack("<d", 1e-4)]
    size = len(model.words) + len(model.labels)
    pruned = -1 if whole else len(model.kept_buckets)
    out.append(struct.pack("<3iqq", size, len(model.words), len(model.labels), model.tokens, pruned))
    for word, count in zip(model.words, model.word_counts.tolist()):
        out.append(word + b"\0" + struct.pack("<qb", count, 0))
    for label, count in zip(model.labels, model.label_counts.tolist()):
        out.append(LABEL_PREFIX + label.encode() + b"\0" + struct.pack("<qb", count, 1))
    if not whole:
        pairs = np.stack([model.kept_buckets, np.arange(len(model.kept_buckets), dtype=np.int32)], axis=1)
        out.append(pairs.astype("<i4").tobytes())
    # a new name of this call's own, created as open() creates a file (0666 less the umask)
    partial = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.partial"
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with open(descriptor, "wb") as f:
            f.write(b"".join(out))
            for rows in (matrix, model.output):
                f.write(b"\0" + struct.pack("<2q", *rows.shape))
                f.write(np.ascontiguousarray(rows, "<f4").tobytes())
            if model.second_stage is not None:
                f.write(_second_stage_bytes(model.second_stage, model.positive))
        os.replace(partial, path)  # a reader of the old model reads all of it, or the new one
    except BaseException:
        os.unlink(partial)
        raise


def _second_stage_bytes(stage: SecondStage, positive: int) -> bytes:
    """The second stage after fastText's model (fastText reads no further than its own): a mark, its sizes,
    the positive label and its float32 weights."""
    inputs, hidden = stage.hidden_weights.shape
    arrays = (stage.mean, stage.scale, stage.hidden_weights, stage.hidden_bias, stage.output_weights,
              np.array([stage.output_bias], np.float32))
    return (SECOND_STAGE + struct.pack("<4i", SECOND_STAGE_VERSION, inputs, hidden, positive)
            + b"".join(np.ascontiguousarray(a, "<f4").tobytes() for a in arrays))


def _second_stage(r: "_Reader", labels: int) -> tuple[SecondStage, int]:
    version, inputs, hidden, positive = r.take("<4i")
    if 0 < version < SECOND_STAGE_VERSION:
        r.fail(f"a second stage of an earlier tokenmill (version {version}), over statistics this one no longer "
               "computes: train the classifier again")
    if (version != SECOND_STAGE_VERSION or inputs != SECOND_STAGE_INPUTS or not 0 < hidden <= MAX_HIDDEN
            or not 0 <= positive < labels):
        r.fail(f"a second stage of version {version}, {inputs} inputs, {hidden} hidden units, label {positive}: "
               f"not one this tokenmill reads ({SECOND_STAGE_INPUTS} inputs)")
    mean, scale = r.array("<f4", inputs), r.array("<f4", inputs)
    weights = r.array("<f4", inputs * hidden).reshape(inputs, hidden)
    bias, out, (out_bias,) = r.array("<f4", hidden), r.array("<f4", hidden), r.take("<f")
    arrays = [np.array(a, np.float32) for a in (mean, scale, weights, bias, out)]  # copies, as the matrices
    if not all(np.isfinite(a).all() for a in arrays) or not np.isfinite(out_bias) or (arrays[1] <= 0).any():
        r.fail("a second stage with a weight that is not a finite number, or a scale of zero or less")
    return SecondStage(*arrays, float(out_bias)), positive


class _Reader:
    def __init__(self, data: bytes, path: str):
        self.data, self.at, self.path = data, 0, path

    def fail(self, what: str):
        raise ModelError(f"{self.path}: {what}")

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            self.fail(f"truncated (at byte {self.at} of {len(self.data)})")
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.at + size > len(self.data):
            self.fail(f"truncated: {count} values of {dtype} declared at byte {self.at}, "
                      f"{len(self.data) - self.at} bytes left")
        values = np.frombuffer(self.data, dtype, count, self.at)
        self.at += size
        return values

    def word(self) -> bytes:
        end = self.data.find(b"\0", self.at, self.at + MAX_WORD_BYTES + len(LABEL_PREFIX) + 64)
        if end < 0:
            self.fail(f"a word without its end at byte {self.at}")
        word, self.at = bytes(self.data[self.at:end]), end + 1
        return word


def read(path: str) -> SupervisedModel:
    """The model in `path`; ModelError for anything else."""
    try:
        with open_regular_file(path) as f:  # (a FIFO waits forever, /dev/zero has no end)
            data = f.read()  # its own size: nothing of what it claims is allocated before it is checked
    except (OSError, ValueError) as e:
        raise ModelError(f"{path}: cannot be read: {getattr(e, 'strerror', None) or e}") from None
    r = _Reader(data, path)
    magic, version = r.take("<2i")
    if magic != MAGIC:
        r.fail("not a fastText model")
    if version != VERSION:
        r.fail(f"fastText format version {version}, not {VERSION}")
    dim, _ws, epoch, _min_count, _neg, word_ngrams, loss, kind, bucket, minn, maxn, lr_update = r.take("<12i")
    r.take("<d")
    if kind != MODEL_SUPERVISED or loss != LOSS_SOFTMAX or minn or maxn:
        r.fail(f"not a model tokenmill trains (model {kind}, loss {loss}, character n-grams {minn}-{maxn}): a "
               "supervised softmax model of words and word n-grams, trained by jobs.train_classifier")
    # fastText trains a model of words alone (-wordNgrams 1, no character n-grams) with no buckets at all
    if not (0 < dim <= MAX_DIM and 1 <= word_ngrams <= MAX_NGRAMS and 0 <= bucket < 2**31
            and (bucket > 0 or word_ngrams == 1)):
        r.fail(f"dimension {dim}, word n-grams {word_ngrams}, buckets {bucket}: out of bounds")
    size, nwords, nlabels, tokens, pruned = r.take("<3iqq")
    if not (0 < nwords and 2 <= nlabels <= MAX_LABELS and size == nwords + nlabels and -1 <= pruned <= bucket):
        r.fail(f"bad dictionary sizes ({size} entries, {nwords} words, {nlabels} labels, {pruned} buckets)")
    if size * 10 > len(data) - r.at:  # each entry takes at least a byte of word, its end, 8 + 1 bytes
        r.fail(f"truncated: {size} dictionary entries declared, {len(data) - r.at} bytes left")
    words, counts, kinds = [], [], []
    for _ in range(size):
        words.append(r.word())
        count, entry_kind = r.take("<qb")
        counts.append(count)
        kinds.append(entry_kind)
    if any(kinds[:nwords]) or not all(k == 1 for k in kinds[nwords:]):
        r.fail("the labels must follow the words")
    if not all(w.startswith(LABEL_PREFIX) for w in words[nwords:]) or len(set(words)) != size:
        r.fail("a label without __label__, or an entry given twice")
    pairs = None  # pruned < 0: every bucket's row, as fastText writes a model (and write(whole=True))
    if pruned >= 0:
        pairs = r.array("<i4", 2 * pruned).reshape(-1, 2)
        buckets = pairs[:, 0]
        if pruned and not ((np.diff(buckets) > 0).all() and buckets[0] >= 0 and buckets[-1] < bucket
                           and (pairs[:, 1] == np.arange(pruned)).all()):
            r.fail("pruned buckets out of order or out of range")
    inputs = nwords + (bucket if pairs is None else pruned)
    if inputs * nlabels > min(MAX_OUTPUTS, max(MIN_OUTPUTS, OUTPUTS_PER_BYTE * len(data))):
        r.fail(f"{inputs:,} rows x {nlabels:,} labels: past the outputs a scorer holds for a file of "
               f"{len(data):,} bytes")
    matrices = []
    for name, rows in (("input", inputs), ("output", nlabels)):
        (quantized,) = r.take("<?")
        if quantized:
            r.fail(f"a quantized {name} matrix (.ftz) is not a model tokenmill trains")
        m, n = r.take("<2q")
        if (m, n) != (rows, dim):
            r.fail(f"{name} matrix {m} x {n}, expected {rows} x {dim}")
        matrices.append(r.array("<f4", m * n).reshape(m, n))
    stage, positive = None, 0
    if data[r.at:r.at + len(SECOND_STAGE)] == SECOND_STAGE:
        r.at += len(SECOND_STAGE)
        if nlabels != 2:
            r.fail(f"a second stage for {nlabels} labels (it scores two)")
        stage, positive = _second_stage(r, nlabels)
    if r.at != len(data):
        r.fail(f"{len(data) - r.at} bytes after the model")
    if not all(np.isfinite(m).all() for m in matrices):
        r.fail("a weight that is not a finite number")
    try:
        labels = [w[len(LABEL_PREFIX):].decode("utf-8") for w in words[nwords:]]
    except UnicodeDecodeError:
        r.fail("a label that is not UTF-8")
    kept = np.arange(bucket, dtype=np.int32) if pairs is None else pairs[:, 0].astype(np.int32)
    return SupervisedModel(words[:nwords], np.array(counts[:nwords], np.int64), labels,
                           np.array(counts[nwords:], np.int64), word_ngrams, bucket, kept,
                           np.array(matrices[0], np.float32), np.array(matrices[1], np.float32), epoch,
                           lr_update, tokens, stage, positive)
