"""The dedup decisions of a corpus small enough for one process, in memory, by the rule the Spark
stages apply (spark_stages/dedup.py): rank in survivor order, exact duplicates, LSH star edges,
verification, connected components, survivors per component, clusters.

On a small corpus each of those Spark stages is a few jobs of fixed cost (0.6-2.7 s each on the
dedup benchmark's 18,555 documents, 8.6 s together) for work that NumPy does in a fraction of a second;
the same decisions either way (tested output for output). Ranks here are positions 0..n-1; Spark's are
other numbers in the same order, and nothing written depends on their values.
"""

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prep.dedup.batches import DedupConfig, fixed_width_values, signature_array, survivors_batches
from prep.dedup.lsh import band_hashes
from prep.dedup.near_clusters import connected_components_in_memory

TEXT_HASH = "text_hash"  # of the raw text and every other column: the survivor key after the normalized text


@dataclass(frozen=True)
class SourceCounts:
    """One source's documents as dedup decided them (the Spark stages count the same)."""
    input: int
    kept: int
    exact: int  # exact duplicates
    near: int  # near duplicates
    earlier: int  # dropped for a copy in a source named before


@dataclass(frozen=True)
class GraphStats:
    """The near-duplicate graph, for the stats."""
    candidate_pairs: int
    verified_pairs: int
    giant_buckets: int  # LSH buckets over the config's giant_bucket
    rounds: int  # connected-component rounds (0 in memory)


@dataclass
class Decisions:
    """Per document, in the order of the features given: its rank, its exact survivor's rank, whether it is
    kept, its cluster (the smallest rank in it), the cluster's size and the rank of the kept document that holds
    its text (its own, kept); and the graph's counts for the stats."""
    rank: np.ndarray
    exact_rep: np.ndarray
    kept: np.ndarray
    cluster: np.ndarray
    cluster_size: np.ndarray
    copy: np.ndarray
    graph: GraphStats

    def counts(self, sources: np.ndarray, source: int) -> SourceCounts:
        mine, exact = sources == source, self.rank != self.exact_rep
        # ranks go source by source: a copy in a source named before is one ranked before this source's first
        first = self.rank[mine].min() if mine.any() else 0
        return SourceCounts(input=int(mine.sum()), kept=int((mine & self.kept).sum()), exact=int((mine & exact).sum()),
                            near=int((mine & ~exact & ~self.kept).sum()),
                            earlier=int((mine & ~self.kept & (self.copy < first)).sum()))

    def cluster_sizes(self) -> list[tuple[int, int]]:
        """(size, clusters of that size) for clusters of two or more."""
        heads = (self.rank == self.cluster) & (self.cluster_size >= 2)
        return sorted(Counter(self.cluster_size[heads].tolist()).items())


def _groups(*keys: np.ndarray) -> tuple[np.ndarray, int]:
    """(the group of each element: equal keys, one group; the number of groups). By one sort of the keys
    (NumPy's unique over rows compares them as bytes: ten times slower)."""
    n = len(keys[0])
    order = np.lexsort(keys[::-1])
    starts = np.zeros(n, bool)
    starts[:1] = True
    for key in keys:
        ordered = key[order]
        starts[1:] |= ordered[1:] != ordered[:-1]
    group = np.empty(n, np.int64)
    group[order] = np.cumsum(starts) - 1
    return group, int(starts.sum())


def _group_min(group: np.ndarray, groups: int, values: np.ndarray) -> np.ndarray:
    """Each element's group's smallest value."""
    smallest = np.full(groups, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(smallest, group, values)
    return smallest[group]


def decide(features: pa.Table, sources: np.ndarray, per_source: bool, cfg: DedupConfig) -> Decisions:
    """`features`: row, id_hash, text_len, exact_hash (16 bytes), text_hash (Spark's xxhash64 of the raw text
    and the other columns), signature per document; `sources`: each document's source index. Documents are
    compared within their source only when `per_source`."""
    n = features.num_rows
    row, id_hash, text_len, text_hash = (features[name].to_numpy() for name in ("row", "id_hash", "text_len",
                                                                              TEXT_HASH))
    # 16 bytes as two big-endian words: their unsigned order is Spark's order of the binary column.
    exact = fixed_width_values(features["exact_hash"], ">u8", 2).astype(np.uint64)
    exact_hi, exact_lo = exact[:, 0], exact[:, 1]
    rank = np.empty(n, np.int64)
    rank[np.lexsort((row, text_hash, exact_lo, exact_hi, id_hash, -text_len, sources))] = np.arange(n)
    scope = sources if per_source else np.zeros(n, np.int64)

    exact_rep = _group_min(*_groups(scope, exact_hi, exact_lo), rank)
    survivors = np.flatnonzero(rank == exact_rep)
    signatures = signature_array(features["signature"], cfg.minhash.num_perm)
    edges, candidates, giant = _verified_edges(rank[survivors], scope[survivors], signatures[survivors], cfg)

    near_kept, component = np.ones(n, bool), np.full(n, -1, np.int64)  # by rank; -1: in no component
    copy_of = np.full(n, -1, np.int64)  # by rank: the kept document a near duplicate was removed for
    if len(edges):
        nodes, components = connected_components_in_memory(edges[:, 0], edges[:, 1])
        by_rank = np.empty(n, np.int64)
        by_rank[rank] = np.arange(n)
        order = np.lexsort((nodes, components))  # members by component, then rank
        members = pa.table({"component": components[order], "rank": nodes[order],
                            "signature": features["signature"].take(by_rank[nodes[order]])})
        chosen = pa.Table.from_batches(list(survivors_batches(members.to_batches(), cfg)))
        near_kept[chosen["rank"].to_numpy()] = chosen["near_kept"].to_numpy(zero_copy_only=False)
        copy_of[chosen["rank"].to_numpy()] = chosen["copy_of"].to_numpy()
        component[nodes] = components
    kept = (rank == exact_rep) & near_kept[exact_rep]
    cluster = np.where(component[exact_rep] >= 0, component[exact_rep], exact_rep)
    cluster_size = np.bincount(cluster, minlength=n)[cluster]
    # the kept document holding each one's text: its exact survivor, or the one that survivor was removed for (in
    # an earlier source or its own: "in_an_earlier_source" had been the cluster's first source, a chain's far end)
    copy = np.where(near_kept[exact_rep], exact_rep, copy_of[exact_rep])
    graph = GraphStats(candidates, len(edges), giant, rounds=0)
    return Decisions(rank, exact_rep, kept, cluster, cluster_size, copy, graph)


def _verified_edges(ranks: np.ndarray, scope: np.ndarray, signatures: np.ndarray, cfg: DedupConfig):
    """(verified star edges [u, v], candidate pairs, giant buckets) among the exact survivors: each bucket
    member joined to the bucket's smallest rank."""
    bands = cfg.lsh.bands
    keys = band_hashes(signatures, cfg.lsh)  # [documents, bands]
    member = np.repeat(ranks, bands)
    bucket, buckets = _groups(np.repeat(scope, bands), np.tile(np.arange(bands), len(ranks)), keys.reshape(-1))
    center = _group_min(bucket, buckets, member)
    size = np.bincount(bucket, minlength=buckets)
    giant = int((size > cfg.giant_bucket).sum())
    star = (size[bucket] > 1) & (member != center)
    span = int(ranks.max()) + 1 if len(ranks) else 1  # ranks are below it: a pair is one integer
    pairs = np.unique(member[star] * span + center[star])
    pairs = np.stack([pairs // span, pairs % span], axis=1)
    if not cfg.verify or not len(pairs):
        return pairs, len(pairs), giant
    at = np.empty(span, np.int64)
    at[ranks] = np.arange(len(ranks))
    similarity = (signatures[at[pairs[:, 0]]] == signatures[at[pairs[:, 1]]]).mean(axis=1)
    return pairs[similarity >= cfg.threshold], len(pairs), giant
