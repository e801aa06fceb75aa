"""Connected components of a large graph on Spark: large-star / small-star (Kiveris et al., 2014).

Edges are a DataFrame of (u, v) longs. Each round is a large-star then a small-star step, both
shuffles over the edge list; nothing is collected to the driver but one count per round. Lineage is
cut every few rounds by writing the edges as Parquet, so a run of many rounds does not rebuild its
whole history and a lost executor loses nothing that cannot be recomputed.
The result maps every node that has an edge to the smallest node of its component.

A graph of at most `local_edges` edges (a fixed bound, not a share of the corpus: 2 M edges are
32 MB) is solved on the driver instead, in one job: every round costs a few Spark jobs of fixed
overhead, which on a small graph is all the time there is. The answer is the same either way.
"""

import logging

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from prep.dedup.near_clusters import connected_components_in_memory
from spark_stages.persisted import Persisted

log = logging.getLogger(__name__)
CHECKPOINT_EVERY = 2
MAX_ROUNDS = 100  # log2 of any real graph's diameter is far below this
LOCAL_EDGES = 2_000_000


def _both_directions(edges: DataFrame) -> DataFrame:
    return edges.union(edges.select(F.col("v").alias("u"), F.col("u").alias("v")))


def _large_star(edges: DataFrame) -> DataFrame:
    """Each node links its larger neighbours to the smallest node of its neighbourhood (itself included)."""
    adjacency = _both_directions(edges)
    smallest = adjacency.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
    return (adjacency.join(smallest, "u").where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("u"), F.col("m").alias("v")).distinct())


def _small_star(edges: DataFrame) -> DataFrame:
    """Each node links itself and its smaller neighbours to the smallest of them."""
    # Orient each edge from the larger to the smaller node.
    oriented = edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")).distinct()
    smallest = oriented.groupBy("u").agg(F.min("v").alias("m"))
    moved = (oriented.join(smallest, "u").where(F.col("v") != F.col("m"))
             .select(F.col("v").alias("u"), F.col("m").alias("v")))
    return moved.union(smallest.select("u", F.col("m").alias("v"))).distinct()


def _is_forest_of_stars(edges: DataFrame) -> bool:
    """Converged: every node has one parent, and no parent has a parent of its own (one job)."""
    roles = edges.select(F.col("u").alias("node"), F.col("v").alias("parent")).union(
        edges.select(F.col("v").alias("node"), F.lit(None).cast("long").alias("parent")))
    nodes = roles.groupBy("node").agg(F.countDistinct("parent").alias("parents"),
                                      F.count(F.when(F.col("parent").isNull(), 1)).alias("children"))
    return nodes.where((F.col("parents") > 1) | ((F.col("parents") == 1) & (F.col("children") > 0))).isEmpty()


def _checkpoint(edges: DataFrame, folder: str) -> DataFrame:
    """The edges written as Parquet and read back: cuts the lineage, and survives a lost executor, where
    a localCheckpoint's blocks would be gone with nothing left to recompute them from."""
    edges.write.mode("overwrite").parquet(folder)
    return edges.sparkSession.read.parquet(folder)


class NotConverged(RuntimeError):
    """The rounds ran out before every component was a star."""


def _local_components(edges: pa.Table) -> pa.Table:
    """(node, component) of a small graph, on the driver."""
    nodes, components = connected_components_in_memory(edges.column("u").to_numpy(), edges.column("v").to_numpy())
    return pa.table({"node": nodes, "component": components})


def connected_components(edges: DataFrame, checkpoint_dir: str, kept: Persisted, max_rounds: int = MAX_ROUNDS,
                         local_edges: int = LOCAL_EDGES) -> tuple[DataFrame, int]:
    """((node, component) for every node with an edge, the component being its smallest node; rounds,
    0 when the graph was small enough for the driver).

    `checkpoint_dir` is a folder every executor can reach (the job's staging folder), removed by the caller;
    the rounds between checkpoints are persisted in `kept`, the caller's (spark_stages/persisted.py)."""
    edges = edges.select(F.col("u").cast("long"), F.col("v").cast("long")).where(F.col("u") != F.col("v"))
    edges = edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")).distinct()
    if local_edges:
        head = edges.limit(local_edges + 1).toArrow()
        if head.num_rows <= local_edges:
            log.info("connected components: %d edges, solved on the driver", head.num_rows)
            return edges.sparkSession.createDataFrame(_local_components(head)), 0
    edges = _checkpoint(edges, f"{checkpoint_dir}/round-0")
    for rounds in range(1, max_rounds + 1):
        edges = _small_star(_large_star(edges))
        if rounds % CHECKPOINT_EVERY == 0:
            edges = _checkpoint(edges, f"{checkpoint_dir}/round-{rounds}")
        else:
            edges = kept.keep(edges, StorageLevel.MEMORY_AND_DISK)
        converged = _is_forest_of_stars(edges)
        log.info("connected components: round %d, %s", rounds, "converged" if converged else "not converged yet")
        if converged:
            break
    else:
        raise NotConverged(f"connected components did not converge in {max_rounds} rounds")
    components = edges.select(F.col("u").alias("node"), F.col("v").alias("component"))
    roots = edges.select(F.col("v").alias("node"), F.col("v").alias("component")).distinct()
    return components.union(roots).distinct(), rounds
