"""The dedup stage: exact duplicates, then MinHash-LSH near duplicates, one survivor per cluster.

Writes OUT/docs/ (kept documents, all input columns), OUT/clusters/ (id, cluster_id, cluster, cluster_size,
kept for every document in a cluster of two or more), OUT/report.md and OUT/stats.json.

Survivor rule: the longest text (in characters) is kept; ties go to the smaller 64-bit BLAKE2b hash
of the id, then the smaller normalized-text hash. It depends on the data only, so it is the same on
any number of partitions, cores or machines.

After the signatures, a corpus of at most `in_memory_documents` documents is decided on the driver
(prep/dedup/in_memory.py) instead of by the Spark stages below (_decided), whose few jobs each are
mostly fixed cost at that size; the outputs are the same either way.

Sources: a duplicate across sources is kept once, in the source named first (the source comes before
the rule above), or, `per_source`, sources are deduplicated apart; stats.json counts per source. Named
sources (`--input NAME=PATH ...`) are written by source: OUT/docs/source=NAME/ holds each source's
documents and OUT/clusters/ has a `source` column. One input without a name is one source,
"default", written as it is.
"""

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from prep.dedup.batches import (
    BANDS_SCHEMA,
    FEATURES_SCHEMA,
    SURVIVORS_SCHEMA,
    DedupConfig,
    bands_batch,
    features_batch,
    survivors_batches,
    verify_batch,
)
from prep.dedup.in_memory import TEXT_HASH, GraphStats, SourceCounts, decide
from prep.dedup.paragraphs import UNITS_SCHEMA, ParagraphConfig, removable_units, units_batch, without
from prep.ingest.inputs import Sources, all_files, is_named
from schemas import FORMAT_VERSION
from schemas.documents import INTERNAL
from spark_stages.components import connected_components
from spark_stages.ingest import SOURCE, check_partitions, default_partitions, load_sources, spread
from spark_stages.outputs import SCRATCH, checksums, commit, staging_dir
from spark_stages.persisted import Persisted, persisted
from spark_stages.reports import bar_chart
from spark_stages.runner import Stage
from spark_stages.session import hashable, spark_schema

log = logging.getLogger(__name__)
ROW = INTERNAL + "row"  # a document's number in the frame read (its place: never a column of the input's)
# what the decisions in memory collect to the driver, at most: 80,000 documents of 4,096 permutations (or long
# ids) passed Spark's spark.driver.maxResultSize (1 GiB) in the collect, a traceback; such a corpus goes to the
# Spark stages. Each row's fixed columns besides its id and signature: row, id hash, length, the texts' hashes,
# source
COLLECTED_ROW_BYTES = 48
IN_MEMORY_BYTES = 256 << 20


@dataclass(frozen=True)
class Config(DedupConfig):
    """What counts as a duplicate (prep/dedup/batches.py), and how the job spreads the work."""
    # after the documents' dedup: paragraphs (lines, runs of sentences) shared by many documents removed from
    # all but the first (prep/dedup/paragraphs.py)
    paragraphs: ParagraphConfig = field(default_factory=ParagraphConfig)
    partitions: int | None = None  # at least this many tasks after the read; output files (default: from input size)
    # A corpus of at most this many documents is decided in memory on the driver after the signatures
    # (prep/dedup/in_memory.py: ~600 bytes per document), not by the Spark stages; 0: always on Spark. Also
    # only where its ids and signatures come to at most IN_MEMORY_BYTES
    in_memory_documents: int = 200_000

    def __post_init__(self):
        super().__post_init__()
        check_partitions(self.partitions)  # -1 had reached repartition after the signatures


class Stages:
    """Seconds per stage, and what each stage's frame measured (`rows`, and any `metrics` asked for): each
    stage is materialized (persisted in `kept`, written to nowhere) before the next starts."""

    def __init__(self, kept: Persisted):
        self.kept = kept
        self.seconds: dict[str, float] = {}
        self.measured: dict[str, dict] = {}
        self._start = time.time()

    def done(self, name: str, frame=None, persist: bool = True, **metrics):
        """`frame` persisted and computed by a write to nowhere, its rows and `metrics` (name=aggregate
        Column) observed on the way: a count, or an aggregation of its own, would each add Spark jobs.
        Without `persist`, for a frame that is cheap to derive again from persisted ones."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        if frame is not None:
            observed = Observation(name)
            frame = frame.observe(observed, F.count(F.lit(1)).alias("rows"),
                                  *(column.alias(key) for key, column in metrics.items()))
            if persist:
                frame = self.kept.keep(frame)
            frame.write.format("noop").mode("overwrite").save()
            self.measured[name] = observed.get
        now = time.time()
        self.seconds[name] = round(now - self._start, 2)
        self._start = now
        log.info("%s: %.1f s", name, self.seconds[name])
        return frame


def size_histogram(sizes: list[tuple[int, int]]) -> dict[str, int]:
    """Cluster counts in power-of-two size bins: "2", "3-4", "5-8", ..."""
    bins: dict[str, int] = {}
    for size, count in sorted(sizes):
        upper = 1 << (size - 1).bit_length()
        label = "2" if upper == 2 else f"{upper // 2 + 1}-{upper}"
        bins[label] = bins.get(label, 0) + count
    return bins


def _signatures(docs, cfg: DedupConfig, partitions: int, stages: Stages):
    """Per document: survivor keys, normalized-text hash and MinHash signature (FEATURES_SCHEMA), and its
    source; persisted (read by the stages that follow, or collected for the decisions in memory)."""
    from pyspark.sql import functions as F

    def with_source(batch):
        features = features_batch(batch, cfg)
        return pa.RecordBatch.from_arrays([*features.columns, batch[SOURCE], batch[TEXT_HASH]],
                                          [*features.schema.names, SOURCE, TEXT_HASH])

    schema = spark_schema(FEATURES_SCHEMA.append(pa.field(SOURCE, pa.int32())).append(pa.field(TEXT_HASH, pa.int64())))
    # the hash of every column (the raw text among them), the survivor rule's last key but the row:
    # documents of one id, one length and one normalized text (case apart, or other columns apart) had been told
    # apart by their row, which follows Spark's read splits
    row_hash = F.xxhash64(*hashable(docs, leave_out=(ROW, SOURCE))).alias(TEXT_HASH)
    texts = spread(docs.select(F.col(ROW).alias("row"), "id", "text", SOURCE, row_hash), partitions)
    features = texts.mapInArrow(lambda batches: map(with_source, batches), schema)
    return stages.done("signatures", features, shingles=F.sum("shingles"), signature_seconds=F.sum("signature_seconds"),
                       collected_bytes=F.sum(F.octet_length("id") + F.octet_length("signature") + COLLECTED_ROW_BYTES))


def _ranked(features, stages: Stages):
    """The features with their rank.

    Rank orders documents as survivors: the source named first, then the longest text, then id hash,
    then text hash. The smallest rank of a group is its survivor, and rank is the node id of the graph.
    It is the position in that order as Spark's sort partitioned it (partition << 33 | offset): the
    same order anywhere, its values not (they depend on the sort's partitions), so nothing written
    depends on them but through order; the outputs are partitioned by stable keys (_write_outputs).
    """
    from pyspark.sql import functions as F

    order = [SOURCE, F.desc("text_len"), "id_hash", "exact_hash", TEXT_HASH, "row"]
    return stages.done("rank", features.orderBy(*order).withColumn("rank", F.monotonically_increasing_id()))


def _verified_edges(sig, cfg: DedupConfig, stages: Stages):
    """(verified pairs, giant buckets) from LSH over the exact survivors' signatures
    (rank, scope, signature).

    Star edges: each bucket member gets one edge to the bucket's smallest rank, so a bucket of n
    documents costs n edges, not n^2 pairs.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    params, num_perm = cfg.lsh, cfg.minhash.num_perm
    bands = sig.mapInArrow(lambda batches: (bands_batch(b, params, num_perm) for b in batches),
                           spark_schema(BANDS_SCHEMA))
    # Each band row with its bucket's center and size: one shuffle of the bands (a bucket table joined
    # back to them would be two more). Read twice (the giant-bucket count, the candidates): persisted.
    bucket = Window.partitionBy("scope", "band", "bucket")
    starred = stages.kept.keep(bands.select("rank", F.min("rank").over(bucket).alias("center"),
                                            F.count(F.lit(1)).over(bucket).alias("size")))
    giant = starred.where((F.col("rank") == F.col("center")) & (F.col("size") > cfg.giant_bucket)).count()
    candidates = (starred.where((F.col("size") > 1) & (F.col("rank") != F.col("center")))
                  .select(F.col("rank").alias("u"), F.col("center").alias("v")).distinct())
    candidates = stages.done("lsh", candidates)
    # Verification: the estimated Jaccard of each candidate pair, from its two signatures.
    pairs = (candidates.join(sig.withColumnRenamed("rank", "u").withColumnRenamed("signature", "sig_u"), "u")
             .join(sig.withColumnRenamed("rank", "v").withColumnRenamed("signature", "sig_v"), "v")
             .select("u", "v", "sig_u", "sig_v"))
    scored = pairs.mapInArrow(lambda batches: (verify_batch(b, cfg) for b in batches),
                              "u long, v long, similarity double")
    edges = scored.where(F.col("similarity") >= cfg.threshold) if cfg.verify else scored
    return stages.done("verify", edges.select("u", "v")), giant


def _survivors(edges, sig, cfg: DedupConfig, stages: Stages, scratch: Path):
    """(rank, near_kept, copy_of, component) for every exact survivor with a verified edge; rounds."""
    from pyspark.sql import functions as F

    components, rounds = connected_components(edges, str(scratch / "components"), stages.kept)
    components = stages.done("components", components)
    members = components.join(sig.withColumnRenamed("rank", "node"), "node").select(
        F.col("component"), F.col("node").alias("rank"), "signature")
    survivors = (members.repartition("component").sortWithinPartitions("component", "rank")
                 .mapInArrow(lambda batches: survivors_batches(batches, cfg), spark_schema(SURVIVORS_SCHEMA)))
    return stages.done("survivors", survivors.join(components.withColumnRenamed("node", "rank"), "rank")), rounds


def _write_outputs(docs, decided, quarantine, partitions: int, staging, sources: Sources):
    """OUT/docs (kept rows, in survivor order; by source when named), OUT/clusters, and OUT/quarantine
    when there is any. Returns (the outputs, the quarantined records)."""
    from pyspark.sql import functions as F

    names = list(sources) if is_named(sources) else None

    def named(frame):  # the source's name in place of its index; nothing for one input without a name
        if names is None:
            return frame.drop(SOURCE)
        return frame.withColumn("source", F.element_at(F.array(*map(F.lit, names)), F.col(SOURCE) + 1)).drop(SOURCE)

    # Files by stable keys (a document's id hash, a cluster's head id), rows in survivor order inside.
    rank, id_hash = INTERNAL + "rank", INTERNAL + "id_hash"  # beside the input's columns: none of theirs
    kept_rows = decided.where("kept").select(F.col("row").alias(ROW), F.col("rank").alias(rank),
                                             F.col("id_hash").alias(id_hash))
    if DROPPED in docs.columns:  # left too short by the paragraphs' step: OUT/dropped has them
        docs = docs.where(~F.col(DROPPED)).drop(DROPPED)
    kept = named(docs.join(kept_rows, ROW).repartition(partitions, id_hash).sortWithinPartitions(rank)
                 .drop(ROW, rank, id_hash)).write
    (kept.partitionBy("source") if names else kept).parquet(str(staging / "docs"))
    # a cluster's name: its first document's id (which can name two clusters where ids repeat), and a number,
    # a hash of that document's every column and source (rank, the order's position, follows the partitions)
    heads = decided.where(F.col("rank") == F.col("cluster")).select(
        "cluster", F.col("id").alias("cluster_id"), F.xxhash64(TEXT_HASH, SOURCE).alias("cluster_number"))
    clusters = (decided.where(F.col("cluster_size") >= 2).join(heads, "cluster")
                .repartition(partitions, "cluster_id").sortWithinPartitions("cluster", "rank")
                .select("id", "cluster_id", F.col("cluster_number").alias("cluster"),
                        F.col("cluster_size").cast("long"), "kept", SOURCE))
    named(clusters).write.parquet(str(staging / "clusters"))
    outputs = ["docs", "clusters"]
    quarantined = quarantine.count()
    if quarantined:
        named(quarantine).write.parquet(str(staging / "quarantine"))
        outputs.append("quarantine")
    return outputs, quarantined


DROPPED = INTERNAL + "dropped"  # the paragraphs' step: a document left too short
UNITS_REMOVED, REMOVED, KEEPS = INTERNAL + "units_removed", INTERNAL + "removed", INTERNAL + "keeps"


def _without_shared_units(docs, decided, cfg: ParagraphConfig, partitions: int, staging: Path, stages: Stages,
                          per_source: bool = False, source_names: list[str] | None = None):
    """The kept documents with the units shared by more than cfg.max_documents of them removed from all but
    the first (counted in each source apart, `per_source`, as the documents were deduplicated: the same document
    kept in two sources was both's first); those left under cfg.min_doc_chars marked DROPPED and written to
    OUT/dropped (reason paragraphs:too_short), the others changed listed in OUT/changed (id, units_removed);
    OUT/paragraphs: each shared unit's key and documents, and its text for the most shared (and under per_source,
    the source it is counted in, of `source_names`, by index). Only keys cross the
    network (a unit's text stays in its document), and Spark counts them: the driver holds EXAMPLES keys at
    most. Returns (the documents, the step's counts, the documents it dropped by source index)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, LongType, StructField, StructType

    kept = docs.join(decided.where("kept").select(F.col("row").alias(ROW)), ROW)
    scope = (F.col(SOURCE) if per_source else F.lit(0)).cast("int").alias("scope")
    units = stages.done("paragraph units", kept.select(F.col(ROW).alias("row"), "id", "text", scope).mapInArrow(
        lambda batches: (units_batch(b, cfg) for b in batches), spark_schema(UNITS_SCHEMA)))
    shared = stages.done("shared units", units.groupBy("scope", "key").agg(
        F.count(F.lit(1)).alias("documents"), F.min("doc_key").alias("first_doc")).where(
        F.col("documents") > cfg.max_documents))
    # per document: the shared units it loses, and those it is the first of (it keeps them whole, and is never
    # dropped: dropped, it took a unit's last copy out of the corpus)
    removals = (units.join(shared.select("scope", "key", "first_doc"), ["scope", "key"])
                .groupBy(F.col("row").alias(ROW))
                .agg(F.collect_list(F.when(F.col("doc_key") != F.col("first_doc"), F.col("key"))).alias(REMOVED),
                     F.collect_list(F.when(F.col("doc_key") == F.col("first_doc"), F.col("key"))).alias(KEEPS)))
    # the input's own columns keep the types Spark hands them over in (a timestamp with a time zone had no Arrow
    # type of its own here: an AssertionError); the step's two added
    schema = StructType([*docs.schema.fields, StructField(UNITS_REMOVED, LongType()),
                         StructField(DROPPED, BooleanType())])
    names = docs.columns  # a name list for the tasks (the frame itself stays on the driver)
    added = [UNITS_REMOVED, DROPPED]

    def cut(batches):
        for batch in batches:
            removed, keeps = batch[REMOVED].to_pylist(), batch[KEEPS].to_pylist()
            done = [without(t, set(r), cfg, frozenset(k or ())) if r else (t, 0)
                    for t, r, k in zip(batch["text"].to_pylist(), removed, keeps)]
            columns = [pa.array([d[0] for d in done], pa.string()) if name == "text" else batch[name]
                       for name in names]
            # left too short (or with nothing at all, whatever min_doc_chars), unless it keeps a unit's first copy
            dropped = [d[1] > 0 and not k and (len(d[0]) < cfg.min_doc_chars or not d[0].strip())
                       for d, k in zip(done, keeps)]
            yield pa.RecordBatch.from_arrays(columns + [pa.array([d[1] for d in done], pa.int64()),
                                                        pa.array(dropped, pa.bool_())], names=names + added)

    result = stages.done("paragraphs cut", docs.join(removals, ROW, "left").mapInArrow(cut, schema),
                         units_removed=F.sum(UNITS_REMOVED), dropped=F.sum(F.col(DROPPED).cast("long")),
                         changed=F.sum((F.col(UNITS_REMOVED) > 0).cast("long")))
    dropped = result.where(F.col(DROPPED)).drop(DROPPED, UNITS_REMOVED, ROW, SOURCE).withColumn(
        "reason", F.lit("paragraphs:too_short"))
    dropped.repartition(partitions, "id").sortWithinPartitions("id", F.xxhash64(*hashable(dropped))) \
        .write.parquet(str(staging / "dropped"))
    # the documents kept with text cut, by id: what `jobs.report --compare` tells apart from the kept as they were
    (result.where((F.col(UNITS_REMOVED) > 0) & ~F.col(DROPPED)).select("id", F.col(UNITS_REMOVED).alias(
        "units_removed")).repartition(partitions, "id").sortWithinPartitions("id", "units_removed")
     .write.parquet(str(staging / "changed")))
    _shared_examples(shared, units, result, cfg, source_names if per_source else None).write.parquet(
        str(staging / "paragraphs"))
    measured = stages.measured["paragraphs cut"]
    counts = {"unit": cfg.unit, "max_documents": cfg.max_documents, "units": stages.measured["paragraph units"]["rows"],
              "shared_units": stages.measured["shared units"]["rows"], "units_removed": measured["units_removed"] or 0,
              "documents_changed": measured["changed"] or 0, "documents_dropped": measured["dropped"] or 0}
    by_source = dict(result.where(F.col(DROPPED)).groupBy(SOURCE).count().collect()) if counts["documents_dropped"] \
        else {}
    return result.drop(UNITS_REMOVED), counts, by_source


EXAMPLES = 200  # shared units whose text OUT/paragraphs holds: the most shared
EXAMPLE_SCHEMA = pa.schema([("key", pa.int64()), ("text", pa.string())])


def _shared_examples(shared, units, result, cfg: ParagraphConfig, source_names: list[str] | None):
    """Every shared unit (key, documents), with the text of the EXAMPLES most shared, read in their first
    documents (which keep them); with `source_names` (units counted per source), the source of each (a unit in
    two sources is two rows)."""
    from pyspark.sql import functions as F

    top = shared.orderBy(F.desc("documents"), "key", "scope").limit(EXAMPLES)
    wanted = {row["key"] for row in top.select("key").collect()}
    firsts = (units.join(top.select("scope", "key", F.col("first_doc").alias("doc_key")),
                         ["scope", "key", "doc_key"]).select(F.col("row").alias(ROW)).distinct())

    def texts(batches):
        for batch in batches:
            found = {}
            for text in batch["text"].to_pylist():
                for a, b, key in removable_units(text, cfg):
                    if key in wanted:
                        found.setdefault(key, text[a:b])
            yield pa.RecordBatch.from_pylist([{"key": k, "text": t} for k, t in found.items()], schema=EXAMPLE_SCHEMA)

    examples = (result.join(firsts, ROW).select("text").mapInArrow(texts, spark_schema(EXAMPLE_SCHEMA))
                .groupBy("key").agg(F.min("text").alias("text")))
    source = [F.element_at(F.array(*map(F.lit, source_names)), F.col("scope") + 1).alias("source")] \
        if source_names else []
    return (shared.join(examples, "key", "left").select("key", "documents", "text", *source)
            .repartition(1).sortWithinPartitions(F.desc("documents"), "key", *(["source"] if source else [])))


@dataclass
class Decided:
    """What both deciders (_decided on Spark, _decided_in_memory) return."""
    frame: object  # every document: row, rank, exact_rep, id_hash, id, SOURCE, kept, cluster, cluster_size, copy
    counts: list[SourceCounts]  # per source, in order
    cluster_sizes: list[tuple[int, int]]  # (size, clusters of that size), for clusters of two or more
    graph: GraphStats


COUNTED = [f.name for f in dataclasses.fields(SourceCounts)]


def _counted(source_count: int) -> dict:
    """Per source: SourceCounts's fields as aggregates the decide stage observes, named "kept_1", ... (an
    Observation's metrics are flat names)."""
    from pyspark.sql import functions as F

    def total(condition):  # 0, not null, on an empty input
        return F.coalesce(F.sum(condition.cast("long")), F.lit(0))

    exact = F.col("rank") != F.col("exact_rep")
    conditions = {"input": F.lit(True), "kept": F.col("kept"), "exact": exact, "near": ~exact & ~F.col("kept"),
                  "earlier": ~F.col("kept") & (F.col("copy") < F.col("source_first"))}
    return {f"{key}_{i}": total(condition & (F.col(SOURCE) == i))
            for i in range(source_count) for key, condition in conditions.items()}


def _per_source(found: list[SourceCounts], quarantine, names: list[str], dropped_in: dict[int, int] | None) -> dict:
    """stats.json's counts per source, its quarantined records in its input; where the paragraphs' step ran
    (`dropped_in`: the documents it left too short, by source index), those are not kept."""
    held = dict(quarantine.groupBy(SOURCE).count().collect())
    counts = {}
    for i, (name, c) in enumerate(zip(names, found)):
        counts[name] = {"input": c.input + held.get(i, 0), "kept": c.kept, "exact_duplicates": c.exact,
                        "near_duplicates": c.near, "in_an_earlier_source": c.earlier, "quarantined": held.get(i, 0)}
        if dropped_in is not None:
            counts[name]["kept"] -= dropped_in.get(i, 0)
            counts[name]["paragraphs_dropped"] = dropped_in.get(i, 0)
    return counts


def _decided(features, cfg: Config, per_source: bool, source_count: int, stages: Stages, scratch: Path) -> Decided:
    """The decisions by the Spark stages."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    features = _ranked(features, stages)
    # Documents are only compared within a scope: everything, or each source alone.
    features = features.withColumn("scope", F.col(SOURCE) if per_source else F.lit(0))
    # Exact duplicates: same normalized text; the smallest rank survives. Near duplicates among the rest.
    features = features.withColumn("exact_rep", F.min("rank").over(Window.partitionBy("scope", "exact_hash")))
    sig = stages.done("exact", features.where(F.col("rank") == F.col("exact_rep")).select("rank", "scope",
                                                                                         "signature"))
    edges, giant = _verified_edges(sig, cfg, stages)
    survivors, rounds = _survivors(edges, sig, cfg, stages, scratch)

    # Decisions for every document, and its cluster: the near component of its exact survivor.
    # the kept document holding each one's text (prep/dedup/in_memory.py's `copy`), and each source's first
    # rank: ranks go source by source, so a copy ranked before it is in a source named before
    near_kept = F.coalesce("near_kept", F.lit(True))
    firsts = dict(features.groupBy(SOURCE).agg(F.min("rank")).collect())
    decided = (features.select("row", "rank", "exact_rep", "id_hash", "id", SOURCE, TEXT_HASH)
               .join(survivors.select(F.col("rank").alias("exact_rep"), "near_kept", "copy_of", "component"),
                     "exact_rep", "left")
               .withColumn("kept", (F.col("rank") == F.col("exact_rep")) & near_kept)
               .withColumn("copy", F.when(near_kept, F.col("exact_rep")).otherwise(F.col("copy_of")))
               .withColumn("source_first", F.element_at(F.array(*(F.lit(firsts.get(i, 0)) for i in range(
                   source_count))), F.col(SOURCE) + 1))
               .withColumn("cluster", F.coalesce("component", "exact_rep")))
    decided = decided.withColumn("cluster_size", F.count("*").over(Window.partitionBy("cluster")))
    decided = stages.done("decide", decided, **_counted(source_count))
    measured = stages.measured["decide"]
    found = [SourceCounts(**{key: measured[f"{key}_{i}"] for key in COUNTED}) for i in range(source_count)]
    sizes = sorted((r["cluster_size"], r["clusters"]) for r in decided.where(F.col("rank") == F.col("cluster"))
                   .where(F.col("cluster_size") >= 2).groupBy("cluster_size").agg(F.count("*").alias("clusters"))
                   .collect())
    graph = GraphStats(stages.measured["lsh"]["rows"], stages.measured["verify"]["rows"], giant, rounds)
    return Decided(decided, found, sizes, graph)


def _decided_in_memory(features, cfg: Config, per_source: bool, source_count: int, stages: Stages,
                       _scratch: Path) -> Decided:
    """_decided's results for a corpus of at most cfg.in_memory_documents: the features collected to the
    driver, decided there (prep/dedup/in_memory.py), the decisions handed back to Spark as one small frame."""
    columns = ["row", "id_hash", "text_len", "exact_hash", TEXT_HASH, "signature"]
    table = features.select(*columns, "id", SOURCE).toArrow()
    sources = table[SOURCE].to_numpy()
    decisions = decide(table.select(columns), sources, per_source, cfg)
    decided = pa.table({"row": table["row"], "rank": decisions.rank, "exact_rep": decisions.exact_rep,
                        "id_hash": table["id_hash"], "id": table["id"], SOURCE: table[SOURCE],
                        TEXT_HASH: table[TEXT_HASH], "kept": decisions.kept,
                        "cluster": decisions.cluster, "cluster_size": decisions.cluster_size,
                        "copy": decisions.copy})
    decided = features.sparkSession.createDataFrame(decided)
    stages.done("decide in memory")
    return Decided(decided, [decisions.counts(sources, i) for i in range(source_count)], decisions.cluster_sizes(),
                   decisions.graph)


def run(spark, sources: Sources, cfg: Config, out: str, per_source: bool = False) -> dict:
    """Finds and removes the duplicates, writes the outputs; returns the stats (also OUT/stats.json).
    `sources` ({name: files}, in order) are deduplicated together unless `per_source`. Every frame the
    stages persisted is released when it ends, however it ends."""
    with persisted() as kept:
        return _deduplicate(spark, sources, cfg, out, per_source, Stages(kept))


def _deduplicate(spark, sources: Sources, cfg: Config, out: str, per_source: bool, stages: Stages) -> dict:
    from pyspark.sql import functions as F

    staging = staging_dir(out)
    partitions = cfg.partitions or default_partitions(all_files(sources))
    # Raw input parsed once (the documents and the quarantine count and write read it), kept with the
    # stages' other frames until run() ends. Numbered documents are derived from those records again for
    # nothing (same partitions, same numbers): persisted only when some source is Parquet, which Spark
    # would read again.
    docs, quarantine = load_sources(spark, sources, stages.kept)
    docs = stages.done("read", docs.withColumn(ROW, F.monotonically_increasing_id()),
                       persist=len(stages.kept) < len(sources))
    features = _signatures(docs, cfg, partitions, stages)
    signed = stages.measured["signatures"]
    in_memory = signed["rows"] <= cfg.in_memory_documents and (signed["collected_bytes"] or 0) <= IN_MEMORY_BYTES
    decided_by = _decided_in_memory if in_memory else _decided
    decided = decided_by(features, cfg, per_source, len(sources), stages, staging / SCRATCH)
    if decided.graph.giant_buckets:
        log.warning("%d LSH buckets have more than %d documents (boilerplate); star edges keep them linear",
                    decided.graph.giant_buckets, cfg.giant_bucket)

    shared, dropped_in = {}, None
    if cfg.paragraphs.enabled:
        docs, shared, dropped_in = _without_shared_units(docs, decided.frame, cfg.paragraphs, partitions, staging,
                                                         stages, per_source, list(sources))
    outputs, quarantined = _write_outputs(docs, decided.frame, quarantine, partitions, staging, sources)
    outputs += ["paragraphs", "dropped", "changed"] if cfg.paragraphs.enabled else []
    stages.done("write")
    sizes, params = decided.cluster_sizes, cfg.lsh
    stats = {
        "format_version": FORMAT_VERSION,
        "input": sum(c.input for c in decided.counts) + quarantined,
        "kept": sum(c.kept for c in decided.counts),
        "exact_duplicates": sum(c.exact for c in decided.counts),
        "near_duplicates": sum(c.near for c in decided.counts),
        "quarantined": quarantined,
        "clusters": sum(c for _, c in sizes),
        "largest_cluster": max((s for s, _ in sizes), default=0),
        "cluster_size_histogram": size_histogram(sizes),
        **dataclasses.asdict(decided.graph),  # candidate_pairs, verified_pairs, giant_buckets, rounds
        "threshold": cfg.threshold, "num_perm": cfg.minhash.num_perm, "ngram": cfg.minhash.ngram,
        "bands": params.bands, "rows": params.rows,
        # the compiled signature pass alone, in core-seconds summed over tasks: shingles / seconds is
        # its rate per core
        "shingles": stages.measured["signatures"]["shingles"] or 0,
        "signature_seconds": round(stages.measured["signatures"]["signature_seconds"] or 0.0, 3),
        "seconds": stages.seconds,
        "checksums": checksums(spark, staging, outputs),
        "sources": _per_source(decided.counts, quarantine, list(sources), dropped_in),
        "scope": "per-source" if per_source else "across",
        **({"paragraphs": shared} if shared else {}),
    }
    if shared:
        stats["kept"] -= shared["documents_dropped"]
    (staging / "report.md").write_text(dedup_report(stats), encoding="utf-8")
    commit(staging, out, outputs, stats)
    return stats


def dedup_report(stats: dict) -> str:
    lines = ["# Dedup report", "",
             f"Input {stats['input']} documents: kept {stats['kept']}, exact duplicates {stats['exact_duplicates']}, "
             f"near duplicates {stats['near_duplicates']}, quarantined {stats['quarantined']}.",
             f"{stats['clusters']} clusters, the largest of {stats['largest_cluster']}; LSH {stats['bands']} bands x "
             f"{stats['rows']} rows; {stats['candidate_pairs']} candidate pairs, {stats['verified_pairs']} verified; "
             f"{stats['rounds']} connected-component rounds.", "", "## Cluster sizes", "", "```"]
    lines += bar_chart(stats["cluster_size_histogram"], stats["clusters"])
    lines += ["```", ""]
    if len(stats["sources"]) > 1:
        keys = ["input", "kept", "exact_duplicates", "near_duplicates", "in_an_earlier_source", "quarantined"]
        heads = ["input", "kept", "exact", "near", "in an earlier source", "quarantined"]
        if "paragraphs" in stats:  # left too short by the paragraphs' step
            keys, heads = keys + ["paragraphs_dropped"], heads + ["too short after paragraphs"]
        lines += [f"## Sources (deduplicated {stats['scope']})", "", "| source | " + " | ".join(heads) + " |",
                  "|---" * (len(heads) + 1) + "|"]
        lines += [f"| {name} | " + " | ".join(str(s.get(key, 0)) for key in keys) + " |"
                  for name, s in stats["sources"].items()]
        lines.append("")
    lines += ["## Seconds per stage", ""] + [f"- {k}: {v}" for k, v in stats["seconds"].items()] + [""]
    return "\n".join(lines)


def summary(stats: dict) -> str:
    return (f"input {stats['input']}: kept {stats['kept']}, exact duplicates {stats['exact_duplicates']}, "
            f"near duplicates {stats['near_duplicates']}, quarantined {stats['quarantined']}; "
            f"{stats['clusters']} clusters (largest {stats['largest_cluster']}), {stats['rounds']} rounds, "
            f"{sum(stats['seconds'].values()):.1f} s")


STAGE = Stage("dedup", "Remove exact and near duplicates (MinHash-LSH, connected components): one survivor per "
              "cluster.", Config, run, summary, modules=("spark_stages.dedup",), named_inputs=True)
