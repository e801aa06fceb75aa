import numpy as np
import pyarrow as pa
import pytest

from prep.dedup.batches import SURVIVORS_SCHEMA, DedupConfig, fixed_width_values, survivors_batches
from prep.dedup.near_clusters import select_survivors


def test_survivors_of_components_that_span_batches_are_decided_whole():
    """Components sorted by (component, rank), cut into batches anywhere, give what each component
    decided alone gives."""
    rng = np.random.default_rng(0)
    sizes = [2, 5, 1, 3, 7, 2, 4]  # components 10, 20, ...: the batches below cut through several
    rows = []
    for c, size in enumerate(sizes):
        base = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
        for r in range(size):
            sig = base.copy()
            sig[:10 * r] = rng.integers(0, 2**32, 10 * r)  # drifting away from the first: a chain
            rows.append((10 * (c + 1), 100 * c + r, sig))
    table = pa.table({"component": [r[0] for r in rows], "rank": [r[1] for r in rows],
                      "signature": [r[2].tobytes() for r in rows]})
    expected = {}
    for c in sorted({r[0] for r in rows}):
        members = [r for r in rows if r[0] == c]
        kept, copy_of = select_survivors(np.vstack([m[2] for m in members]), 0.8)
        for m, k, i in zip(members, kept, copy_of):
            expected[m[1]] = (bool(k), members[i][1] if i >= 0 else -1)
    for cuts in ([], [1], [3, 4, 9], [3, 3, 9], list(range(1, table.num_rows))):  # [3, 3]: an empty batch
        bounds = [0, *cuts, table.num_rows]
        batches = [table.to_batches()[0].slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:])]
        out = pa.Table.from_batches(list(survivors_batches(batches, DedupConfig())), SURVIVORS_SCHEMA)
        assert out["rank"].to_pylist() == table["rank"].to_pylist()
        got = {r: (k, c) for r, k, c in zip(*(out[n].to_pylist() for n in ("rank", "near_kept", "copy_of")))}
        assert got == expected
    assert not all(k for k, _ in expected.values()) and any(k for k, _ in list(expected.values())[1:])


def test_fixed_width_values_read_the_data_buffer_of_any_slice_and_refuse_other_widths():
    values = [np.arange(i, i + 4, dtype=np.uint32).tobytes() for i in range(6)]
    for column in (pa.array(values, pa.binary()), pa.array(values, pa.large_binary())):
        sliced = column.slice(2, 3)
        assert fixed_width_values(sliced, np.uint32, 4).tolist() == [list(range(i, i + 4)) for i in range(2, 5)]
        chunked = pa.chunked_array([column.slice(0, 2), column.slice(4)])
        assert fixed_width_values(chunked, np.uint32, 4)[:, 0].tolist() == [0, 1, 4, 5]
    assert fixed_width_values(pa.array([], pa.binary()), np.uint32, 4).shape == (0, 4)
    for bad in (pa.array([values[0], values[1][:12]]), pa.array([values[0], None])):
        with pytest.raises(ValueError, match="not all 16 bytes"):
            fixed_width_values(bad, np.uint32, 4)
