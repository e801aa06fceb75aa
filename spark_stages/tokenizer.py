"""The tokenizer stage: train the 128K hybrid BPE+Unigram tokenizer (or a plain baseline) on Spark.

Writes OUT/tokenizer.json (a `tokenizers` file; OUT also loads with transformers'
AutoTokenizer.from_pretrained), OUT/bpe_same_size.json (the plain BPE the report compares with) and
OUT/report.json (written last: it marks a complete output).

A share of the documents, chosen by a hash of their id, is held out for the report. The BPE (and
the plain Unigram) train on the driver from a hash sample of the rest, bounded by `sample_bytes`;
every language keeps its share of the corpus in it. For the hybrid, the pre-tokens of all training
documents are counted on Spark and every EM pass runs on the executors over that (pre-token, count)
table, so the Unigram model is fit on the whole corpus, not only on what fits in the driver.
"""

import functools
import json
import logging
import math
import time
import uuid
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa

from prep.ingest.inputs import InputError, Sources
from prep.tokenizer.base import BOS, EOS, PAD
from prep.tokenizer.encode import TokenizerFile
from prep.tokenizer.lattice import expected_counts, trie
from prep.tokenizer.pretokenize import from_symbols
from prep.tokenizer.report import KINDS, evaluate, gain, table, text_kind
from prep.tokenizer.train import Corpus, TokenizerConfig, bpe_of_size, train
from prep.tokenizer.unigram import EStep
from prep.tokenizer.unigram import count_pre_tokens as count_texts
from schemas import FORMAT_VERSION
from spark_stages.ingest import SOURCE, load_sources
from spark_stages.outputs import commit, staging_dir
from spark_stages.peak_memory import PeakMemory
from spark_stages.persisted import Persisted, persisted
from spark_stages.runner import Stage

log = logging.getLogger(__name__)

HASH_BUCKETS = 1 << 30
MAX_HELD_OUT_BYTES = 16 << 20  # enough for stable per-language figures; encoded on the driver
# The sample reaches the driver a partition at a time (toLocalIterator): each one a task result that the
# driver's block manager holds whole, so they are kept this small whatever the sample's size.
SAMPLE_PARTITION_BYTES = 32 << 20
COUNTS_SCHEMA = "piece string, count long"


@dataclass(frozen=True)
class Config(TokenizerConfig):
    """The tokenizer (prep/tokenizer/train.py), and what of the corpus trains and tests it."""
    sample_bytes: int = 1_000_000_000  # at most this much text streams to the driver, where BPE trains
    held_out: float = 0.05  # share of the documents (by a hash of the id) kept out of training for the report

    def __post_init__(self):
        super().__post_init__()
        if self.sample_bytes < 1 or not 0 < self.held_out < 1:
            raise ValueError(f"sample_bytes must be positive and held_out in (0, 1), got {self.sample_bytes}, "
                             f"{self.held_out}")


def with_hash(docs):
    """A uniform number in [0, 1) per document from its id: the held-out split and the sample."""
    from pyspark.sql import functions as F

    return docs.select("id", "text", SOURCE, (F.pmod(F.xxhash64("id"), F.lit(HASH_BUCKETS)) / HASH_BUCKETS).alias("u"))


def source_rates(training, weights: list[Fraction | float]) -> list[float]:
    """The share of each source's training text to keep so that the sources' shares of what is kept
    follow their weights: the source with the most weight per byte whole, the others thinned."""
    from pyspark.sql import functions as F

    sizes = dict(training.groupBy(SOURCE).agg(F.sum(F.octet_length("text"))).collect())
    per_byte = [Fraction(str(weight)) / sizes[i] if sizes.get(i) else Fraction(0) for i, weight in enumerate(weights)]
    top = max(per_byte)
    return [float(p / top) if top else 1.0 for p in per_byte]


def held_out_texts(docs, share: float) -> list[str]:
    """The held-out texts, in hash order, up to MAX_HELD_OUT_BYTES."""
    from pyspark.sql import functions as F

    texts, size = [], 0
    for row in docs.where(docs.u < share).orderBy("u", "id", F.xxhash64("text")).select("text").toLocalIterator():
        size += len(row.text.encode())
        if size > MAX_HELD_OUT_BYTES:
            break
        texts.append(row.text)
    return texts


def _sample(training, sample_bytes: int, kept: Persisted):
    """Training documents at the rate sample_bytes / training bytes (by hash: the same on any cluster).
    `training` has `v`, uniform in [0, 1), and `keep`, its source's rate: a document is in the training
    text when v < keep, and in the sample when v < keep x rate."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    total = training.where(F.col("v") < F.col("keep")).agg(F.sum(F.octet_length("text"))).first()[0] or 0
    rate = min(1.0, sample_bytes / total) if total else 1.0
    # ranges of the hash, each sorted: the order of orderBy("u", "id", the text's hash: an id may repeat), in
    # as many partitions as the size needs (orderBy alone makes spark.sql.shuffle.partitions of them: 125 MB
    # each for a 1 GB sample on 8, which a 4 GB local driver lost as task results); on disk, not in the memory
    # a local driver's JVM shares with its executor
    partitions = max(1, math.ceil(total * rate / SAMPLE_PARTITION_BYTES))
    chosen = training.where(F.col("v") < F.col("keep") * rate)
    order = ["u", "id", F.xxhash64("text")]
    sample = kept.keep(chosen.repartitionByRange(partitions, *order).sortWithinPartitions(*order).select("text"),
                       StorageLevel.DISK_ONLY)
    return sample, total, rate


def count_pre_tokens(training, kept: Persisted, superwords: bool = False):
    """The (pre-token, count) table of the training documents, each task counting its own first."""
    def count(batches):
        counts = count_texts((text for batch in batches for text in batch.column("text").to_pylist()), superwords)
        yield pa.RecordBatch.from_pydict({"piece": list(counts), "count": list(counts.values())})

    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    partial = training.select("text").mapInArrow(count, COUNTS_SCHEMA)
    return kept.keep(partial.groupBy("piece").agg(F.sum("count").alias("count")), StorageLevel.MEMORY_AND_DISK)


def count_characters(table) -> dict[str, int]:
    def count(batches):
        from collections import Counter

        counts = Counter()
        for batch in batches:
            for piece, n in zip(batch.column("piece").to_pylist(), batch.column("count").to_pylist()):
                for char in from_symbols(piece).decode("utf-8", errors="replace"):
                    counts[char] += n
        yield pa.RecordBatch.from_pydict({"piece": list(counts), "count": list(counts.values())})

    from pyspark.sql import functions as F

    rows = table.mapInArrow(count, COUNTS_SCHEMA).groupBy("piece").agg(F.sum("count").alias("count")).collect()
    return {row.piece: row["count"] for row in rows}


_TRIES = {}  # E-step key → the model's trie


def _trie_of(model):
    """The trie of a broadcast (key, pieces, scores), built once per Python worker and E-step (Spark
    reuses its workers across tasks). A module-level function, so tasks call it by reference and
    share the cache."""
    key, pieces, scores = model.value
    if key not in _TRIES:
        _TRIES.clear()
        _TRIES[key] = trie(pieces, scores)
    return _TRIES[key]


def spark_e_step(spark, table) -> EStep:
    """Each E-step on the executors: the model is broadcast, each task segments its share of the table
    and returns one vector of piece counts; the driver adds them up."""
    def step(pieces: list[str], scores: np.ndarray) -> tuple[np.ndarray, float]:
        model, size = spark.sparkContext.broadcast((uuid.uuid4().hex, pieces, scores.tolist())), len(pieces)

        def run(batches):
            current = _trie_of(model)
            freq, tokens = np.zeros(size), 0.0
            for batch in batches:
                f, t = expected_counts(current, batch.column("piece").to_pylist(), batch.column("count").to_numpy())
                freq, tokens = freq + f, tokens + t
            yield pa.RecordBatch.from_pydict({"freq": [freq.tobytes()], "tokens": [tokens]})

        rows = table.mapInArrow(run, "freq binary, tokens double").collect()
        model.unpersist()
        return sum(np.frombuffer(r.freq) for r in rows), sum(r.tokens for r in rows)

    return step


def transformers_config(vocab_size: int) -> dict:
    """tokenizer_config.json: lets transformers' AutoTokenizer.from_pretrained(OUT) load the folder.
    split_special_tokens: the text "<|eos|>" in a document stays text, as in tokenmill's own encoding
    (tokenizer.json cannot say so: `encode_special_tokens` is not saved in it)."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS, "pad_token": PAD,
            "model_max_length": 1_000_000_000, "clean_up_tokenization_spaces": False, "split_special_tokens": True,
            "vocab_size": vocab_size}


def _by_kind(texts: list[str]) -> dict[str, list[str]]:
    groups = {kind: [] for kind in KINDS}
    for text in texts:
        groups[text_kind(text)].append(text)
    return groups


def held_out_report(tokenizer, baseline, held: list[str]) -> dict:
    """The held-out figures: round trip, and bytes/token per kind for the tokenizer and its baseline."""
    decoded = (tokenizer.decode(e.ids, skip_special_tokens=False)
               for e in tokenizer.encode_batch(held, add_special_tokens=False))
    kinds = _by_kind(held)
    result = {"docs": len(held), "round_trip_exact": sum(d == text for d, text in zip(decoded, held)),
              "trained": evaluate(tokenizer, kinds)}
    if baseline is not None:
        result["bpe_same_size"] = evaluate(baseline, kinds)
        result["gain"] = gain(result["trained"], result["bpe_same_size"])
    return result


def readable(tokenizer) -> None:
    """InputError where the shards job would refuse the tokenizer trained (its pieces together past what it
    reads: a vocabulary filled with reserved tokens to 300,032 had trained, and shards refused it)."""
    try:
        TokenizerFile.from_text(tokenizer.to_str(), "the tokenizer trained")
    except ValueError as e:
        raise InputError(f"{e}: not written, as the shards job would not read it (a smaller --vocab-size, or "
                         "shorter pieces, --bpe.max-token-bytes)") from None


def run(spark, sources: Sources, cfg: Config, out: str, weights: dict[str, Fraction | float] | None = None) -> dict:
    """Trains the tokenizer and its baseline on the sources' text, writes them; returns the report (also
    OUT/report.json). With `weights` ({name: weight}) the sources' text is taken in those shares (each
    source's text as it is without)."""
    from pyspark.sql import functions as F

    started = time.time()
    with PeakMemory() as peak, persisted() as kept:  # read for held-out, sizes, sample, counts, quarantine
        loaded, quarantine = load_sources(spark, sources, kept)
        docs = with_hash(loaded)
        held = held_out_texts(docs, cfg.held_out)
        log.info("%d documents held out for the report", len(held))
        training = docs.where(docs.u >= cfg.held_out).withColumn("v", (docs.u - cfg.held_out) / (1 - cfg.held_out))
        rates = source_rates(training, [weights[n] for n in sources]) if weights else [1.0] * len(sources)
        training = training.withColumn("keep", F.element_at(F.array(*map(F.lit, rates)), F.col(SOURCE) + 1))
        sample, training_bytes, rate = _sample(training, cfg.sample_bytes, kept)
        if not training_bytes:  # every document removed before this stage (or held out): no text to learn from
            raise InputError("no text to train the tokenizer on: every document of the input was removed or held "
                             "out before it")
        training = training.where(F.col("v") < F.col("keep"))
        log.info("training on %d bytes of text; the driver's sample takes %.2f%% of it", training_bytes, 100 * rate)
        # only the hybrid needs them
        counts = functools.cache(lambda: count_pre_tokens(training, kept, cfg.superword.superwords))
        corpus = Corpus(sample=lambda: (row.text for row in sample.toLocalIterator()),
                        e_step=lambda: spark_e_step(spark, counts()), char_counts=lambda: count_characters(counts()))
        tokenizer, details = train(corpus, cfg)
        training_seconds = time.time() - started
        readable(tokenizer)
        log.info("%s trained in %.1f s; now the plain BPE of the same size, for the report", cfg.algorithm,
                 training_seconds)
        baseline = bpe_of_size(corpus, cfg, cfg.vocab_size) if cfg.algorithm != "bpe" else None
        hybrid_counted = counts.cache_info().currsize > 0
        if weights:
            details["source_rates"] = {name: round(r, 6) for name, r in zip(sources, rates)}
        details.update(training_bytes=training_bytes, sample_rate=round(rate, 6),
                       distinct_pre_tokens=counts().count() if hybrid_counted else None,
                       quarantined_records=quarantine.count())  # input records that are not documents
        report = {"format_version": FORMAT_VERSION, "algorithm": cfg.algorithm, "vocab_size": cfg.vocab_size,
                  "training": details, "held_out": held_out_report(tokenizer, baseline, held)}
    report.update(training_seconds=round(training_seconds, 1), job_seconds=round(time.time() - started, 1),
                  peak_memory_bytes=peak.bytes)
    warnings = []
    if details["filled_with_reserved"]:
        warnings.append(f"the corpus gave {details['learned_pieces']} pieces: the vocabulary was filled "
                        f"with {details['filled_with_reserved']} reserved tokens")
    if not held:
        warnings.append("no document was held out (too few documents): the held-out figures are empty")
    if warnings:
        report["warning"] = "; ".join(warnings)
    staging = staging_dir(out)
    tokenizer.save(str(staging / "tokenizer.json"))
    if baseline is not None:  # kept so users (and benchmarks/bench_tokenizer.py) can compare for themselves
        baseline.save(str(staging / "bpe_same_size.json"))
    (staging / "tokenizer_config.json").write_text(json.dumps(transformers_config(cfg.vocab_size), indent=2) + "\n")
    commit(staging, out, [], report, marker="report.json")
    return report


def summary(report: dict) -> str:
    lines = [f"{report['algorithm']} tokenizer, {report['vocab_size']} tokens: trained in "
             f"{report['training_seconds']} s, peak memory {report['peak_memory_bytes'] / 2**30:.2f} GiB; held-out "
             f"round trip exact on {report['held_out']['round_trip_exact']}/{report['held_out']['docs']} documents",
             table(report)]
    if "warning" in report:
        lines.append(f"warning: {report['warning']}")
    return "\n".join(lines)


STAGE = Stage("train_tokenizer", "Train the hybrid BPE+Unigram tokenizer (or a plain baseline) on Spark.", Config,
              run, summary, modules=("spark_stages.tokenizer",), named_inputs=True)
