"""Which documents of a connected component are kept.

Connected components of verified LSH edges can still chain: A ~ B and B ~ C with A and C far apart.
Removing every member but one would then lose C's content. So inside each component, documents are
taken in survivor order (longest text first, ties by id hash) and a document is removed only when
its estimated Jaccard similarity to an already kept document reaches the threshold; otherwise it is
kept too. Every removed document therefore has a kept near-copy, and two documents at or above the
threshold are never both kept unless the estimate misses.
"""

import numpy as np

from prep.dedup.lsh import estimated_jaccard

# A row is compared with at most this many kept rows, so a giant component of unrelated documents
# (boilerplate chaining) costs O(size x this) rather than O(size^2). Rows beyond it are kept: the
# cap can only keep a duplicate, never lose content.
MAX_COMPARED = 1000


def select_survivors(sigs: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """For rows already in survivor order: (kept flags, index of the kept row each removed row copies; -1 if kept)."""
    kept_rows: list[int] = []
    kept = np.zeros(len(sigs), bool)
    copy_of = np.full(len(sigs), -1, np.int64)
    for i in range(len(sigs)):
        if kept_rows:
            similarity = estimated_jaccard(sigs[kept_rows[:MAX_COMPARED]], sigs[i])
            best = int(np.argmax(similarity))
            if similarity[best] >= threshold:
                copy_of[i] = kept_rows[best]
                continue
        kept[i] = True
        kept_rows.append(i)
    return kept, copy_of


def connected_components_in_memory(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(every node of the edges u-v, sorted; the smallest node of its component), by SciPy."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    nodes, index = np.unique(np.concatenate([u, v]), return_inverse=True)
    graph = coo_matrix((np.ones(len(u), np.int8), (index[:len(u)], index[len(u):])), shape=(len(nodes), len(nodes)))
    _, labels = connected_components(graph, directed=False)
    smallest = np.full(labels.max() + 1 if len(labels) else 0, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(smallest, labels, nodes)
    return nodes, smallest[labels]
