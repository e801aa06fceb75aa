"""Connected components against a union-find, on random graphs and long chains: large-star/small-star
on Spark (local_edges=0 forces it) and the driver's solution of small graphs."""

import random

import pytest

from spark_stages.components import NotConverged, connected_components
from spark_stages.persisted import persisted

pytestmark = pytest.mark.spark


def union_find_components(edges):
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    nodes = {n for e in edges for n in e}
    groups = {}
    for n in nodes:
        groups.setdefault(find(n), set()).add(n)
    return {n: min(groups[find(n)]) for n in nodes}


def spark_components(spark, edges, folder, local_edges=0):
    frame = spark.createDataFrame(edges, "u long, v long")
    with persisted() as kept:
        result, rounds = connected_components(frame, str(folder / "checkpoints"), kept, local_edges=local_edges)
        found = {r["node"]: r["component"] for r in result.collect()}  # while its rounds are kept
    return found, rounds


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("local_edges", [0, 10_000])
def test_random_graphs_match_union_find(spark, seed, local_edges, tmp_path):
    rng = random.Random(seed)
    nodes = rng.randint(50, 400)
    edges = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(rng.randint(nodes // 2, nodes * 2))]
    edges = [(u, v) for u, v in edges if u != v]
    result, rounds = spark_components(spark, edges, tmp_path, local_edges)
    assert result == union_find_components(edges)
    assert (rounds == 0) == (local_edges > 0)  # small enough for the driver when it may take it


def test_long_chain_converges_in_logarithmic_rounds(spark, tmp_path):
    order = list(range(2000))
    random.Random(3).shuffle(order)  # a chain whose node numbers are not in chain order
    edges = list(zip(order, order[1:]))
    result, rounds = spark_components(spark, edges, tmp_path)
    assert set(result.values()) == {0} and len(result) == 2000
    assert rounds <= 25


def test_several_chains_and_stars(spark, tmp_path):
    edges = [(i, i + 1) for i in range(100, 160)] + [(500, j) for j in range(501, 540)] + [(7, 3)]
    result, _ = spark_components(spark, edges, tmp_path)
    assert result == union_find_components(edges)


def test_running_out_of_rounds_is_an_error_naming_them(spark, tmp_path):
    edges = spark.createDataFrame([(i, i + 1) for i in range(300)], "u long, v long")
    with pytest.raises(NotConverged, match="in 2 rounds"):
        with persisted() as kept:
            connected_components(edges, str(tmp_path / "checkpoints"), kept, max_rounds=2, local_edges=0)
