import numpy as np

from prep.dedup.lsh import lsh_params
from prep.dedup.near_clusters import select_survivors


def test_chain_does_not_remove_unrelated_ends():
    """A ~ B ~ C but A !~ C: C is kept, because its content survives nowhere else."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
    b, c = a.copy(), a.copy()
    b[:20] = rng.integers(0, 2**32, 20)  # B shares 108/128 with A
    c[:20] = b[:20]
    c[20:40] = rng.integers(0, 2**32, 20)  # C shares 108/128 with B, 88/128 with A
    kept, copy_of = select_survivors(np.vstack([a, b, c]), threshold=0.8)
    assert kept.tolist() == [True, False, True] and copy_of.tolist() == [-1, 0, -1]


def test_lsh_parameters_are_datasketchs():
    assert (lsh_params(0.8, 128).bands, lsh_params(0.8, 128).rows) == (9, 13)
