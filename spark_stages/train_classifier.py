"""The train_classifier stage: a classifier trained from the user's own labelled documents.

Its examples come one of three ways: `--label NAME=PATH` two times or more (the documents of each label), one
`--input PATH` whose documents carry their label in a field (`label_field`), or the DCLM recipe, `--positive
PATH --negative-from PATH` (`negatives` documents of the second corpus, say the clean job's output, taken as
negatives). Spark reads them, takes at most `max_per_label` of each label, the first by a hash of the id
(the same documents however the input is laid out), holds out `heldout` of them by the same hash, and
turns each into its text form (prep/classify/text.py); the driver trains on the rest in the order of that
hash (prep/classify/train.py: one core, so the same input and settings give the same model, byte for byte)
and scores the held-out documents.

Writes OUT/model.bin (fastText's format: prep/classify/fasttext_bin.py; OUT/fasttext.bin too with
`fasttext_copy`, every bucket's row, as fastText itself loads it), OUT/report.json and OUT/report.md: per
label precision, recall, F1 and ROC AUC on the held-out documents, the confusion matrix, the score
distributions, the training data's counts and checksums, and what was read and not taken; and
OUT/quarantine/, the records that could not be read (error, file, line, raw), as the other jobs write theirs.
"""

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from prep.classify import fasttext_bin
from prep.classify.classifier import Classifier, label_shown
from prep.classify.fasttext_bin import MAX_LABELS, MAX_WORD_BYTES, ModelError
from prep.classify.metrics import evaluation
from prep.classify.stacking import train_classifier, words_learned_little
from prep.classify.stats import NAMES as STAT_NAMES
from prep.classify.stats import document_stats
from prep.classify.text import model_line
from prep.classify.train import Diverged, TrainConfig
from prep.dedup.batches import BANDS_SCHEMA, DedupConfig, bands_batch, signature_array
from prep.dedup.lsh import estimated_containment, estimated_size
from prep.dedup.minhash import minhash_batch
from prep.ingest.inputs import NAMED_INPUT, InputError, Sources
from prep.langid import LanguageConfig, identify_each
from prep.normalize import NormalizeConfig, normalize
from schemas import FORMAT_VERSION
from spark_stages.ingest import load_documents
from spark_stages.outputs import commit, staging_dir
from spark_stages.persisted import persisted
from spark_stages.runner import Stage
from spark_stages.session import column, spark_schema

log = logging.getLogger(__name__)

LABEL_SOURCE, POSITIVE, NEGATIVE_FROM, LABELLED = "label:", "positive", "negative-from", "labelled"
HELD_OUT_PARTS = 10_000  # the hash's resolution for `heldout`
# The LSH candidates of the DCLM recipe's copy check: pairs of documents of about this Jaccard similarity or
# more (found at 0.7 with probability 0.99, at 0.5 0.55, 0.3 0.06: 25 bands of 5 rows); a lower one would find
# the copies a clean job cut more of, and would make candidates of every two pages of one site's template
COPY_CANDIDATES = 0.5
# ... and a document whose shingles occur this many times each on average is no copy: a positive's line
# repeated (the README example's cleaned corpus: 1.015 times at the median, at most 1.37, as estimated)
COPY_REPEATS = 2.0
# fastText's copy of a model (fasttext_copy) holds a row for every bucket, made in memory first: fastText's own
# defaults (2,000,000 buckets of 100) are 800 MB
MAX_FASTTEXT_COPY_BYTES = 1 << 32


@dataclass
class Config:
    train: TrainConfig = field(default_factory=TrainConfig)  # fastText's arguments and the text read
    label_field: str = "label"  # with one --input: the field holding each document's label
    positive_label: str = "positive"  # --positive: the label of its documents
    negative_label: str = "negative"  # --negative-from: the label of the documents taken from it
    negatives: int = 20_000  # --negative-from: documents taken from it (the first by a hash of the id)
    # --negative-from: a document this share of whose 5-word shingles are one --positive document's (a MinHash
    # estimate) is a copy of it, cleaned or not: no negative
    copy_threshold: float = 0.8
    max_per_label: int = 20_000  # documents read of each label, the first by a hash of the id (the rest unread)
    heldout: float = 0.1  # the share of each label's documents held out for the report, by the same hash
    split_seed: int = 0  # the hash that samples, holds out and orders the examples
    fasttext_copy: bool = False  # also OUT/fasttext.bin: every bucket's row, as fastText loads it (larger)

    def __post_init__(self):
        if not 0 <= self.heldout < 1 or self.negatives < 1 or self.max_per_label < 2:
            raise ValueError("heldout must be in [0, 1), negatives at least 1 and max_per_label at least 2")
        if not 0 < self.copy_threshold <= 1:
            raise ValueError(f"copy_threshold must be in (0, 1], got {self.copy_threshold}")
        if self.positive_label == self.negative_label:
            raise ValueError(f"positive_label and negative_label must differ, got {self.positive_label!r} twice")
        if any(not label or "\0" in label or len(label.encode()) > MAX_WORD_BYTES
               for label in (self.positive_label, self.negative_label)):
            raise ValueError(f"positive_label and negative_label must be 1 to {MAX_WORD_BYTES} bytes without NUL "
                             "(a model file holds them)")
        if self.fasttext_copy and self.train.bucket * self.train.dim * 4 > MAX_FASTTEXT_COPY_BYTES:
            raise ValueError(f"fasttext_copy writes every bucket's row: train.bucket x train.dim x 4 bytes = "
                             f"{self.train.bucket * self.train.dim * 4:,}, over {MAX_FASTTEXT_COPY_BYTES:,}; a "
                             "smaller train.bucket")


def input_flags(parser) -> None:
    parser.add_argument("--label", action="append", default=[], metavar="NAME=PATH",
                        help="the documents of one label (repeat for each label, two at least)")
    parser.add_argument("--positive", metavar="PATH", help="the DCLM recipe: the documents to find more of")
    parser.add_argument("--negative-from", metavar="PATH", help="... and the corpus negatives are taken from")


def input_specs(args) -> dict[str, str]:
    """The named sources of the three ways; ValueError for any other combination."""
    labels, recipe = args.label, [args.positive, args.negative_from]
    ways = [bool(labels), any(recipe), bool(args.input)]
    if sum(ways) > 1:
        raise ValueError("give --label NAME=PATH (two or more), or --positive and --negative-from, or one "
                         "--input with a label field, not several of these")
    if labels:
        found = [NAMED_INPUT.fullmatch(value) for value in labels]
        if not all(found):
            raise ValueError(f"--label takes NAME=PATH, NAME of letters, digits, '_', '.' and '-' from a letter or "
                             f"digit (a label field may hold any label), got {labels[found.index(None)]!r}")
        names = [m.group(1) for m in found]
        if len(set(names)) < 2 or len(set(names)) < len(names):
            raise ValueError(f"--label needs two labels or more, each once, got {', '.join(names)}")
        return {LABEL_SOURCE + m.group(1): m.group(2) for m in found}
    if any(recipe):
        if not all(recipe):
            raise ValueError("--positive and --negative-from go together")
        return {POSITIVE: args.positive, NEGATIVE_FROM: args.negative_from}
    return {LABELLED: ",".join(args.input)} if args.input else {}


def run(spark, sources: Sources, cfg: Config, out: str) -> dict:
    started = time.time()
    staging = staging_dir(out)
    examples = _examples(spark, sources, cfg, staging)
    held, lines, labels, stats = examples["heldout"], examples["line"], examples["label"], examples["stats"]
    training = [i for i in range(len(lines)) if not held[i]]
    log.info("training on %d documents (%d held out)", len(training), len(lines) - len(training))
    trained = sorted({labels[i] for i in training})
    if len(trained) < 2:
        raise InputError(f"the documents left for training (after the held-out {cfg.heldout:g}) hold "
                         f"{len(trained)} label{'s' if len(trained) != 1 else ''}: a classifier needs two; add "
                         f"documents of {', '.join(sorted(set(labels) - set(trained)))[:200]} or lower --heldout")
    # a label whose documents were all held out is no label of the model: said, then counted, not scored
    missing = sorted(set(labels) - set(trained))
    unlearned = [f"the label {label!r} is not in the model: all its {labels.count(label)} documents were held out"
                 for label in missing[:MAX_NAMED]]
    if len(missing) > MAX_NAMED:
        unlearned.append(f"{len(missing) - MAX_NAMED} other labels are not in the model: all their documents were "
                         "held out")
    if examples["read"]["without_label"] or examples["read"]["quarantined"]:
        log.warning("%s", left_out(examples["read"]))
    try:
        model, loss = train_classifier(
            [lines[i] for i in training], stats[training], [labels[i] for i in training],
            np.array([examples["key"][i] & 1 for i in training]), cfg.train)
        classifier = Classifier(model)  # the checks a model file from elsewhere passes, on the one made here
    except Diverged as e:
        raise InputError(f"{e} (train.lr)") from None
    except ModelError as e:  # words of the documents made to collide in its table, say
        raise InputError(f"the model trained from these documents cannot be read back: {e}") from None
    fasttext_bin.write(model, str(staging / "model.bin"))
    if cfg.fasttext_copy:
        fasttext_bin.write(model, str(staging / "fasttext.bin"), whole=True)
    heldout = [i for i in range(len(lines)) if held[i] and labels[i] in model.labels]
    scores = classifier.probabilities_of([lines[i] for i in heldout], stats[heldout])
    truth = np.array([model.labels.index(labels[i]) for i in heldout], np.int64)
    report = {
        "format_version": FORMAT_VERSION,
        "labels": model.labels,
        "read": examples["read"],
        "training": {**_counts(labels, training, lines), "languages": _languages(examples["lang"], labels, training)},
        # every document held out counted (a label held out whole too: the counts had said 0 of 19), those of the
        # model's labels scored
        "heldout": {**evaluation(model.labels, truth, scores),
                    **_counts(labels, [i for i in range(len(lines)) if held[i]], lines), "scored": len(heldout)},
        "model": {"words": len(model.words), "ngram_buckets_kept": int(len(model.kept_buckets)),
                  "dim": model.dim, "bytes": (staging / "model.bin").stat().st_size,
                  "sha256": hashlib.sha256((staging / "model.bin").read_bytes()).hexdigest(),
                  "training_loss": round(loss, 6)},
        "settings": asdict(cfg),
        "seconds": round(time.time() - started, 1),
    }
    learned_little = [f"the log-odds the n-gram models of half the {len(training)} training documents gave the "
                      "other half spread under a nat: the scores rest on the documents' statistics more than on their "
                      f"words; more documents or epochs (train.epoch, {cfg.train.epoch} now) help"
                      ] if words_learned_little(model) else []
    twice = examples["read"]["texts_under_two_labels"]
    conflicting = [f"{twice} texts are given under two labels or more (the same text, by a hash of it): the model "
                   "learns each of their labels from them; is one file given as two labels?"] if twice else []
    report["heldout"]["warnings"][:0] = (unlearned + conflicting + learned_little +
                                         _one_label_languages(report["training"]) +
                                         _trained_on_the_pool(examples["read"], report["training"], cfg))
    for warning in report["heldout"]["warnings"]:
        log.warning("%s", warning)
    (staging / "report.md").write_text(classifier_report(report), encoding="utf-8")
    commit(staging, out, ["quarantine"], report, marker="report.json")
    return report


def _examples(spark, sources: Sources, cfg: Config, staging) -> dict[str, list]:
    """label, line (text form), heldout of each document read, in the order of the examples' hash; and `read`:
    what was read and not taken (_read_counts), the records that could not be read written to
    staging/quarantine/ as the other jobs write theirs."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    with persisted() as kept:
        docs, unreadable = _labelled(spark, sources, cfg, kept)
        unreadable.write.parquet(str(staging / "quarantine"))
        has_label = F.col("label").isNotNull() & (F.length("label") > 0)
        labelled = has_label & ~F.col("also_positive")
        read = docs.agg(F.count(F.lit(1)).alias("documents"),
                        F.sum(F.when(has_label, 0).otherwise(1)).alias("without_label"),
                        F.sum(F.when(has_label & F.col("also_positive"), 1).otherwise(0)).alias("also_positive"),
                        F.sum(F.when(labelled & (F.col("label") == cfg.negative_label), 1).otherwise(0)).alias(
                            "negative_pool")).first()
        ranked = docs.where(labelled).withColumn("key", split_key(cfg.split_seed)).withColumn(
            "rank", F.row_number().over(Window.partitionBy("label").orderBy("key", "id")))
        chosen = ranked.where(F.col("rank") <= F.col("limit")).withColumn("heldout", held_out(cfg.heldout))
        max_tokens = cfg.train.max_tokens

        def text_form(batches):
            for batch in batches:
                # normalized as the clean job normalizes what it scores: a difference of form between the labels
                # (raw positives, cleaned negatives) must not be what the classifier learns
                texts = [normalize(text, NORMALIZE) for text in batch.column("text").to_pylist()]
                lines = [model_line(text, max_tokens) for text in texts]
                languages = languages_of(texts)
                yield pa.record_batch([batch.column("key"), batch.column("id"), batch.column("label"),
                                       batch.column("heldout"), pa.array(lines, pa.string()),
                                       pa.array(list(document_stats(texts)), pa.list_(pa.float32())),
                                       pa.array(languages, pa.string())], schema=EXAMPLE_SCHEMA)

        rows = chosen.select("key", "id", "label", "heldout", "text").mapInArrow(
            text_form, spark_schema(EXAMPLE_SCHEMA)).orderBy("key", "id").collect()
        counts = _read_counts(read, unreadable.count(), len(rows))
        if NEGATIVE_FROM in sources:
            counts["negative_pool"] = read["negative_pool"] or 0
    labels = sorted({row["label"] for row in rows})
    if len(labels) < 2:
        raise InputError(f"a classifier needs documents of two labels at least; found {labels or 'none'}")
    if len(labels) > MAX_LABELS:
        raise InputError(f"{len(labels)} labels: a model holds at most {MAX_LABELS} (is label_field "
                         f"{cfg.label_field!r} a label, not an id?)")
    if missing := sorted({name[len(LABEL_SOURCE):] for name in sources if name.startswith(LABEL_SOURCE)} -
                         set(labels)):
        unread = counts["quarantined"]
        raise InputError(f"label {missing[0]!r}: no document of it could be read ({unread} record"
                         f"{'s' if unread != 1 else ''} could not be read in all: OUT/_staging/quarantine/)")
    counts["texts_under_two_labels"] = _texts_under_two_labels(rows)
    if unwritable := [label for label in labels if "\0" in label or len(label.encode()) > MAX_WORD_BYTES]:
        raise InputError(f"a label must be 1 to {MAX_WORD_BYTES} bytes without NUL (a model file holds it), got "
                         f"{unwritable[0][:60]!r}")
    return {"label": [row["label"] for row in rows], "line": [row["line"] for row in rows],
            "heldout": [row["heldout"] for row in rows], "key": [row["key"] for row in rows],
            "lang": [row["lang"] for row in rows],
            "stats": np.array([row["stats"] for row in rows], np.float32).reshape(len(rows), len(STAT_NAMES)),
            "read": counts}


def _texts_under_two_labels(rows) -> int:
    """How many texts (by split_key) the rows give under two labels or more: annotators who disagree, or one file
    given as two labels; the model learns both for them."""
    labels_of: dict[int, set] = {}
    for row in rows:
        labels_of.setdefault(row["key"], set()).add(row["label"])
    return sum(len(found) > 1 for found in labels_of.values())


def split_key(seed: int):
    """The hash of a document's text that samples, holds out and orders the examples (ties by id): copies of a
    text under other ids are on one side (with the id in the hash, a text given three times under labels drawn
    at random scored accuracy 0.96 held out)."""
    from pyspark.sql import functions as F

    return F.xxhash64(F.lit(seed), "text")


def held_out(share: float):
    """Whether a document of split_key `key` is held out."""
    from pyspark.sql import functions as F

    return F.pmod("key", F.lit(HELD_OUT_PARTS)) < F.lit(int(share * HELD_OUT_PARTS))


def _labelled(spark, sources: Sources, cfg: Config, kept):
    """(every document read: id, text, label (null or "" where it has none), limit: how many of its label are
    taken; the records that could not be read), of all sources."""
    from pyspark.sql import functions as F

    frames, quarantined = [], []
    for name, files in sources.items():
        docs, unreadable = load_documents(spark, files, kept)
        quarantined.append(unreadable)
        if name.startswith(LABEL_SOURCE):
            label, limit = F.lit(name[len(LABEL_SOURCE):]), cfg.max_per_label
        elif name == POSITIVE:
            label, limit = F.lit(cfg.positive_label), cfg.max_per_label
        elif name == NEGATIVE_FROM:
            label, limit = F.lit(cfg.negative_label), cfg.negatives
        else:
            field_ = column(cfg.label_field) if cfg.label_field in docs.columns else None
            label, limit = _label_field(docs, cfg.label_field, field_), cfg.max_per_label
        frames.append(docs.select("id", "text", label.cast("string").alias("label"), F.lit(limit).alias("limit"),
                                  F.lit(False).alias("also_positive")))
    if POSITIVE in sources and NEGATIVE_FROM in sources:
        # a copy of a document of --positive that --negative-from holds (a corpus the positives were cleaned
        # into) would be taken under both labels: it is no negative
        positive, negative = (list(sources).index(name) for name in (POSITIVE, NEGATIVE_FROM))
        frames[negative] = _marked_copies(frames[negative], frames[positive], cfg.copy_threshold, kept)
    docs, unreadable = frames[0], quarantined[0]
    for frame, more in zip(frames[1:], quarantined[1:]):
        docs, unreadable = docs.unionByName(frame), unreadable.unionByName(more)
    return docs, unreadable


def _marked_copies(corpus, positives, threshold: float, kept):
    """`corpus` with also_positive: whether a document is a copy of one of `positives`, cleaned or not: at least
    `threshold` of its 5-word shingles are that positive's (estimated from the two MinHash signatures), the
    candidates found by LSH at a Jaccard similarity of COPY_CANDIDATES.

    Equal text is not enough, nor is Jaccard similarity: a clean job changes whitespace, drops citation markers
    and whole lines (in the README's example every one of the 710 Python documents the clean job wrote differs
    from its source, a tenth of them by a Jaccard similarity under 0.73), and trained as negatives they teach
    the model against its own positives. What is left of a positive lies inside it: of those 710, all but 11
    have 80% of their shingles or more in their source, and no other document of that corpus more than 37% in
    any Python one (698 found as copies; by equal text, none). A copy that kept under about half its source
    is seldom a candidate (COPY_CANDIDATES); a document that repeats itself is none (COPY_REPEATS)."""
    from pyspark.sql import functions as F

    lsh = DedupConfig(threshold=COPY_CANDIDATES)
    params, num_perm = lsh.lsh, lsh.minhash.num_perm

    def signed(batches):
        for batch in batches:
            found = minhash_batch(batch["text"], lsh.minhash)
            yield pa.RecordBatch.from_arrays(
                [batch["rank"], pa.array(np.zeros(len(found.shingles), np.int32)),
                 pa.array([bytes(row) for row in found.signatures], pa.binary()), pa.array(found.shingles)],
                ["rank", "scope", "signature", "shingles"])

    def signatures(frame, key):
        return kept.keep(frame.select(key.alias("rank"), "text").mapInArrow(
            signed, "rank long, scope int, signature binary, shingles long"))

    def bands(signed_frame, name):
        return signed_frame.mapInArrow(lambda batches: (bands_batch(b, params, num_perm) for b in batches),
                                       spark_schema(BANDS_SCHEMA)).select(F.col("rank").alias(name), "band", "bucket")

    def contained(batches):
        for batch in batches:
            document, positive = (signature_array(batch[name], num_perm) for name in ("sig_u", "sig_v"))
            share = estimated_containment(document, positive)
            # a positive's line over and over is junk of its own, not what is left of the positive
            share[batch["shingles_u"].to_numpy() > COPY_REPEATS * estimated_size(document)] = 0.0
            yield pa.RecordBatch.from_arrays([batch["u"], pa.array(share)], ["u", "share"])

    corpus = corpus.drop("also_positive").withColumn("copy_key", F.xxhash64("id", "text"))
    ours = signatures(corpus, F.col("copy_key"))
    theirs = signatures(positives.select("text").distinct(), F.xxhash64("text"))
    pairs = (bands(ours, "u").join(bands(theirs, "v"), ["band", "bucket"]).select("u", "v").distinct()
             .join(ours.select(F.col("rank").alias("u"), F.col("signature").alias("sig_u"),
                               F.col("shingles").alias("shingles_u")), "u")
             .join(theirs.select(F.col("rank").alias("v"), F.col("signature").alias("sig_v")), "v"))
    shares = pairs.mapInArrow(contained, "u long, share double")
    copies = kept.keep(shares.where(F.col("share") >= threshold).select(F.col("u").alias("copy_key"))
                       .distinct().withColumn("also_positive", F.lit(True)))  # the corpus is read twice
    return (corpus.join(copies, "copy_key", "left").drop("copy_key")
            .withColumn("also_positive", F.coalesce("also_positive", F.lit(False))))


def languages_of(texts: list[str]) -> list[str]:
    """Each text's language, by the language id the clean job runs, with its default settings; a text the model
    refuses (prep.langid.identify_each) is "other", as one it is unsure of: the language is only counted."""
    return ["other" if isinstance(found, Exception) else found[0] for found in identify_each(texts, LANGUAGES)]


def _languages(languages: list[str], labels: list[str], chosen: list[int]) -> dict[str, dict[str, int]]:
    """Documents of each language (the language id's, "other" where it is unsure or refuses the text) and
    label, the commonest language first."""
    counts: dict[str, dict[str, int]] = {}
    for i in chosen:
        of = counts.setdefault(languages[i], {})
        of[labels[i]] = of.get(labels[i], 0) + 1
    return {lang: dict(sorted(of.items())) for lang, of in
            sorted(counts.items(), key=lambda item: (-sum(item[1].values()), item[0]))}


def _one_label_languages(training: dict) -> list[str]:
    """A warning for each label that is the only label of a language's training documents, many of them: the
    model can learn the language as the label (measured: trained on English and Chinese junk and good pages in
    a dozen languages, a classifier kept 46% of the junk made from German pages, 8% of that made from English
    ones; docs/classifiers.md)."""
    alone: dict[str, list[str]] = {}
    for lang, of in training["languages"].items():
        if lang != "other" and len(of) == 1:
            (label, n), = of.items()
            if n >= MIN_ONE_LABEL_LANGUAGE:
                alone.setdefault(label, []).append(f"{lang} ({n})")
    return [f"every training document in {', '.join(found)} is {label!r}: the model can learn the language as "
            f"the label and score any document in it as {label!r}; add documents of the other labels in "
            "those languages, or train a classifier per language" for label, found in sorted(alone.items())]


POOL_SHARE = 0.1  # negatives trained on, as a share of the corpus they come from, past which scores are biased


def _trained_on_the_pool(read: dict, training: dict, cfg: Config) -> list[str]:
    """The DCLM recipe's warning where the negatives trained on are much of the corpus they come from: scoring
    that corpus, the model sees them again and scores them lower than documents it has not seen."""
    pool, trained = read.get("negative_pool", 0), training["by_label"].get(cfg.negative_label, 0)
    if not pool or trained <= POOL_SHARE * pool:
        return []
    return [f"{trained} of the {pool} documents of --negative-from are the model's training negatives: scored by "
            "it, they score lower than documents it has not seen, so a threshold (min_score) means less on that "
            f"corpus; give --negatives under {POOL_SHARE:.0%} of it, or a larger corpus"]


def _read_counts(read, quarantined: int, taken: int) -> dict:
    """What was read and not taken, none of it dropped unseen: documents without a label (or with an empty
    one), documents of --negative-from that are copies of a --positive one, documents over their label's limit
    (max_per_label, negatives: the last by the examples' hash), and records that could not be read (in
    OUT/quarantine/, with their error, file and line)."""
    documents, without_label, also_positive = read["documents"], read["without_label"] or 0, read["also_positive"] or 0
    return {"documents": documents, "taken": taken, "without_label": without_label, "also_positive": also_positive,
            "over_the_limit": documents - without_label - also_positive - taken, "quarantined": quarantined}


EXAMPLE_SCHEMA = pa.schema([("key", pa.int64()), ("id", pa.string()), ("label", pa.string()),
                            ("heldout", pa.bool_()), ("line", pa.string()), ("stats", pa.list_(pa.float32())),
                            ("lang", pa.string())])
NORMALIZE = NormalizeConfig()
LANGUAGES = LanguageConfig()  # the clean job's default settings
MIN_ONE_LABEL_LANGUAGE = 20  # training documents of a language, all of one label, past which the report warns
SHOWN_LANGUAGES = 20  # in report.md, the commonest; report.json has them all
MAX_NAMED = 5  # labels named one by one in a warning; the rest counted (10,000 labels: 962 lines)


def _label_field(docs, name: str, column):
    """A document's label: its column `name` (text, a number or true/false: InputError for lists, records and
    bytes), or that field of its metadata (raw input carries it there), where a list or an object is no label."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType, DoubleType, FloatType, MapType, StructType

    if "metadata" in docs.columns:
        # the field by its name as written ("q.label" had been read as q's field label), and a list or an object
        # told apart from a text that starts with a bracket ("[junk]" had been no label): a list has a first
        # element or is empty, an object has keys
        # (Spark's JSONPath has no escape: a name holding ' or \ is looked up by the dotted form, which reads
        # "q.it's" as the field it's of q, and "it's[0]" as its first element: such a name with a path's
        # character is refused)
        if ("'" in name or "\\" in name) and any(mark in name for mark in ".[]*"):
            raise InputError(f"the label field {name!r} holds a quote or backslash and one of . [ ] *: the raw "
                             "input's metadata cannot be looked up by it (Spark's JSON paths have no escape): "
                             "rename it")
        path = f"$['{name}']" if "'" not in name and "\\" not in name else f"$.{name}"
        value = F.get_json_object("metadata", path)
        nested = (F.get_json_object("metadata", path + "[0]").isNotNull() | (F.trim(value) == "[]")
                  | F.json_object_keys(value).isNotNull())
        from_metadata = F.when(nested, F.lit(None)).otherwise(value)
    else:
        from_metadata = F.lit(None)
    if column is None:
        return from_metadata
    kind = docs.schema[name].dataType
    if isinstance(kind, (ArrayType, MapType, StructType, BinaryType)):  # cast to text, "[junk, x]" was a label
        raise InputError(f"the label field {name!r} holds {kind.simpleString()[:60]} values: a label is text, a "
                         "number or true/false")
    if isinstance(kind, (DoubleType, FloatType)):  # NaN is no label (it had become the class "NaN")
        column = F.when(F.isnan(column), F.lit(None)).otherwise(column)
    return F.coalesce(column.cast("string"), from_metadata)


def _counts(labels: list[str], chosen: list[int], lines: list[str]) -> dict:
    """Documents of each label, and a checksum of what was read (labels and text forms, in order)."""
    digest = hashlib.sha256()
    for i in chosen:
        digest.update(json.dumps([labels[i], lines[i]]).encode() + b"\n")
    by_label = {}
    for i in chosen:
        by_label[labels[i]] = by_label.get(labels[i], 0) + 1
    return {"documents": len(chosen), "by_label": dict(sorted(by_label.items())), "sha256": digest.hexdigest()}


def left_out(read: dict) -> str:
    """What was read and not taken, in words (_read_counts)."""
    also = f"{read['also_positive']} of --negative-from copies of a --positive document (no negatives), " \
        if read.get("also_positive") else ""
    return (f"{read['documents']} documents read, {read['taken']} taken: {read['without_label']} without a label, "
            f"{also}{read['over_the_limit']} over their label's limit (max_per_label, negatives); "
            f"{read['quarantined']} records could not be read (OUT/quarantine/: their error, file and line)")


def classifier_report(report: dict) -> str:
    held = report["heldout"]
    scored = f"accuracy {held.get('accuracy', 0):.4f}" if held.get("scored", held["documents"]) else \
        "no figures (heldout 0)"
    lines = ["# Classifier", "", f"Labels: {', '.join(map(label_cell, report['labels']))}. Trained on "
             f"{report['training']['documents']} documents ({_by_label(report['training']['by_label'])}); "
             f"{held['documents']} held out ({_by_label(held['by_label'])}): {scored}.", "",
             left_out(report["read"]) + ".", "",
             "| label | documents held out | precision | recall | F1 | ROC AUC |", "|---|---|---|---|---|---|"]
    for label, figures in held.get("labels", {}).items():
        auc = "" if figures["roc_auc"] is None else f"{figures['roc_auc']:.4f}"
        lines.append(f"| {label_cell(label)} | {figures['documents']} | {figures['precision']:.4f} | "
                     f"{figures['recall']:.4f} | {figures['f1']:.4f} | {auc} |")
    if "confusion" in held:
        names = [label_cell(name) for name in held["confusion"]["rows_true_columns_predicted"]]
        lines += ["", "Confusion (rows: the label, columns: the prediction):", "",
                  "| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        lines += [f"| {name} | " + " | ".join(map(str, row)) + " |"
                  for name, row in zip(names, held["confusion"]["matrix"])]
    if languages := report["training"].get("languages"):
        shown = list(languages.items())[:SHOWN_LANGUAGES]
        more = f"; {len(languages) - len(shown)} more languages (report.json)" if len(languages) > len(shown) else ""
        lines += ["", "Training documents by language: " + "; ".join(
            f"{lang} {sum(of.values())} ({_by_label(of)})" for lang, of in shown) + more + "."]
    if held.get("warnings"):
        lines += ["", "Warnings:", "", *(f"- {w}" for w in held["warnings"])]
    model = report["model"]
    lines += ["", f"Model: {model['words']} words, {model['ngram_buckets_kept']} n-gram buckets, dimension "
              f"{model['dim']}, {model['bytes']} bytes (sha256 {model['sha256'][:16]}); training loss "
              f"{model['training_loss']}; {report['seconds']} s."]
    return "\n".join(lines) + "\n"


def _by_label(counts: dict[str, int]) -> str:
    return ", ".join(f"{label_cell(label)} {n}" for label, n in counts.items())


def label_cell(label: str) -> str:
    """A label as Markdown shows it in a table's cell, whole (label_shown: " good", "good\\n" and "go\\u00a0od"
    had shown as good and go od, each like another label; report.json holds it exact), its backslashes and
    bars escaped."""
    whole = label_shown(label, MAX_WORD_BYTES * 6)  # a JSON escape is at most 6 characters a byte
    return whole.replace("\\", "\\\\").replace("|", "\\|")


SHOWN_LABELS = 20  # labels the job's summary line names (a label field may hold thousands)


def summary(report: dict) -> str:
    held = report["heldout"]
    with_auc = [(label, f["roc_auc"]) for label, f in held.get("labels", {}).items() if f["roc_auc"] is not None]
    aucs = ", ".join(f"{label_shown(label)} {auc}" for label, auc in with_auc[:SHOWN_LABELS])
    aucs += f", ... ({len(with_auc)} labels)" if len(with_auc) > SHOWN_LABELS else ""
    read = report["read"]
    missing = (f"; {read['without_label']} documents without a label and {read['quarantined']} unreadable records "
               "left out (report.md)") if read["without_label"] or read["quarantined"] else ""
    missing += f"; {len(held['warnings'])} warnings (report.md)" if held.get("warnings") else ""
    scored = f"accuracy {held.get('accuracy', 0)}" if held.get("scored", held["documents"]) else \
        "no figures (heldout 0)"
    return (f"trained on {report['training']['documents']} documents, {held['documents']} held out: {scored}"
            f"{', ROC AUC ' + aucs if aucs else ''}{missing} ({report['seconds']} s)")


def check(cfg: Config, sources: Sources) -> None:
    if LABELLED in sources and not cfg.label_field:
        raise ValueError("label_field must name the field that holds each document's label")


STAGE = Stage("train_classifier", "Train a classifier (fastText's supervised model) from labelled documents.",
              Config, run, summary, modules=("spark_stages.train_classifier",), check=check,
              input_flags=input_flags, input_specs=input_specs)
