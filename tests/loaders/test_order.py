"""The global order: a permutation per epoch, the same for any world size, resumable anywhere."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loaders.order import GlobalOrder, OrderConfig


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=12).filter(lambda r: sum(r) > 0),
       st.integers(1, 5), st.integers(0, 3))
def test_each_epoch_visits_every_row_once(rows, block, seed):
    order = GlobalOrder(rows, OrderConfig(seed=seed, shuffle_block_shards=block))
    n = sum(rows)
    for epoch in (0, 1):
        seen = [order.locate(epoch * n + i) for i in range(n)]
        assert {e for e, _, _ in seen} == {epoch}
        assert sorted((s, r) for _, s, r in seen) == [(s, r) for s, count in enumerate(rows) for r in range(count)]


def test_epochs_and_seeds_shuffle_differently_and_blocks_mix_shards():
    rows = [50] * 8
    order = GlobalOrder(rows, OrderConfig(seed=1))
    first = [order.locate(i)[1:] for i in range(400)]
    second = [order.locate(400 + i)[1:] for i in range(400)]
    other_seed = [GlobalOrder(rows, OrderConfig(seed=2)).locate(i)[1:] for i in range(400)]
    assert first != second and first != other_seed
    assert len({shard for shard, _ in first[:32]}) > 1  # a batch draws from several shards of its block
    assert first == [GlobalOrder(rows, OrderConfig(seed=1)).locate(i)[1:] for i in range(400)]  # pure


def test_empty_shards_are_refused():
    with pytest.raises(ValueError, match="no rows"):
        GlobalOrder([0, 0], OrderConfig())
    assert np.all([GlobalOrder([0, 3], OrderConfig()).locate(i)[1] == 1 for i in range(3)])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=9).filter(lambda r: sum(r) > 0),
       st.integers(1, 4), st.integers(0, 200), st.integers(1, 90))
def test_a_run_of_positions_follows_the_documented_order_across_blocks_and_epochs(rows, block, start, count):
    order = GlobalOrder(rows, OrderConfig(seed=5, shuffle_block_shards=block))
    shards, found_rows = order.locate_many(range(start, start + count))
    expected = [documented_order(rows, 5, block, p) for p in range(start, start + count)]
    assert list(zip(shards.tolist(), found_rows.tolist())) == expected


def documented_order(rows, seed, block, position):
    """The module docstring's order, written out plainly: shards shuffled per epoch, then the rows
    of each block of `block` shards shuffled together."""
    epoch, index = divmod(position, sum(rows))
    shards = np.random.Generator(np.random.PCG64([seed, epoch])).permutation(len(rows))
    for number, first in enumerate(range(0, len(shards), block)):
        pairs = [(int(s), r) for s in shards[first:first + block] for r in range(rows[s])]
        if index < len(pairs):
            return pairs[np.random.Generator(np.random.PCG64([seed, epoch, number])).permutation(len(pairs))[index]]
        index -= len(pairs)


def test_block_shards_lists_what_a_block_reads_in_order_of_need():
    order = GlobalOrder([10, 20, 30, 40, 50], OrderConfig(seed=2, shuffle_block_shards=2))
    epoch, block = order.block_of(0)
    shards, _ = order.locate_many(range(0, 30))
    needed = list(dict.fromkeys(shards.tolist()))
    assert order.block_shards(epoch, block)[:len(needed)] == needed
    assert order.next_block(0, 2) == (1, 0) and order.next_block(0, 0) == (0, 1)
