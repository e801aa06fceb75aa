"""Batches from packed rows: labels stop at document boundaries and padding, positions restart."""

import numpy as np
import pytest

from loaders.collate import IGNORE, collate

PAD = 2
VOCAB = 1000  # the test fixture's (tests/shard_fixtures.py)


def test_labels_positions_and_boundaries():
    # row 0: pieces of 3 and 2 tokens, then padding to 8; row 1: one piece filling the row
    rows = [(np.array([10, 11, 12, 20, 21, PAD, PAD, PAD], np.uint32), np.array([0, 3, 5], np.int32)),
            (np.arange(30, 38, dtype=np.uint32), np.array([0, 8], np.int32))]
    batch = collate(rows, 8, PAD, VOCAB)
    assert batch["input_ids"].dtype == np.int64 and batch["input_ids"][0].tolist() == [10, 11, 12, 20, 21, 2, 2, 2]
    assert batch["labels"][0].tolist() == [11, 12, IGNORE, 21, IGNORE, IGNORE, IGNORE, IGNORE]
    assert batch["labels"][1].tolist() == list(range(31, 38)) + [IGNORE]
    assert batch["position_ids"][0].tolist() == [0, 1, 2, 0, 1, 0, 1, 2]
    assert batch["position_ids"][1].tolist() == list(range(8))
    assert batch["cu_seqlens"].dtype == np.int32 and batch["cu_seqlens"].tolist() == [0, 3, 5, 8, 16]


def test_short_rows_are_padded_to_seq_len_and_long_ones_refused():
    batch = collate([(np.array([5] * 4, np.uint32), np.array([0, 4], np.int32))], 6, PAD, VOCAB)
    assert batch["input_ids"].tolist() == [[5, 5, 5, 5, 2, 2]] and batch["cu_seqlens"].tolist() == [0, 4, 6]
    with pytest.raises(ValueError, match="does not fit"):
        collate([(np.zeros(9, np.uint32), np.array([0, 9], np.int32))], 8, PAD, VOCAB)


def arena_with_shards(folder, shm):
    """Two shards of the test fixture decompressed into an arena of `shm`."""
    from loaders.shard_reader import ShardSource, read_shard
    from loaders.shm_arena import SharedArena, arena_key
    from tests.shard_fixtures import write_shards

    write_shards(folder, parts=2)
    source = ShardSource(str(folder))
    arena = SharedArena(arena_key(source.location, source.index), 2, 64 << 20, shm)
    cached = [arena.fill(s, lambda s=s: read_shard(source, s))[0] for s in range(2)]
    return arena, cached


def looked_up(cached):
    """(runs, generations) of the shards as ShardSet passes them to collate_runs."""
    return np.array([c.run for c in cached], np.int64), np.array([c.generation for c in cached], np.int64)


def test_the_compiled_pass_over_l2_gives_what_gather_and_finish_give_in_one_or_two_parts(tmp_path, private_shm):
    from loaders.collate import batch_of, collate_runs, empty_batch
    from tests.shard_fixtures import PAD as FIXTURE_PAD
    from tests.shard_fixtures import SEQ

    arena, cached = arena_with_shards(tmp_path, private_shm)
    runs, generations = looked_up(cached)
    rng = np.random.default_rng(0)
    for _ in range(20):
        shards = rng.integers(0, 2, 8)
        rows = np.array([rng.integers(0, len(cached[s].arrays.token_offsets) - 1) for s in shards])
        expected = collate([cached[s].arrays.row(r) for s, r in zip(shards, rows)], SEQ, FIXTURE_PAD, VOCAB)
        whole = empty_batch(8, SEQ)
        got = batch_of(whole, collate_runs(arena, runs, generations, shards, rows, SEQ, FIXTURE_PAD, VOCAB, whole))
        split, parts = int(rng.integers(1, 8)), empty_batch(8, SEQ)  # two sources' rows, one after the other
        pieces = collate_runs(arena, runs, generations, shards[:split], rows[:split], SEQ, FIXTURE_PAD, VOCAB, parts)
        pieces = collate_runs(arena, runs, generations, shards[split:], rows[split:], SEQ, FIXTURE_PAD, VOCAB, parts,
                              split, pieces)
        for batch in (got, batch_of(parts, pieces)):
            assert all(np.array_equal(batch[key], expected[key]) and batch[key].dtype == expected[key].dtype
                       for key in expected)
    arena.close()


def test_the_install_builds_the_compiled_pass():
    from loaders.collate import KERNEL_BUILT

    assert KERNEL_BUILT, "loaders/_collate.c did not build: `make install` needs a C compiler and Python's headers"


def test_the_compiled_pass_reads_only_entries_at_the_generation_looked_up(tmp_path, private_shm):
    from loaders.collate import STALE, collate_runs, empty_batch
    from loaders.shm_arena import Field
    from tests.shard_fixtures import PAD as FIXTURE_PAD
    from tests.shard_fixtures import SEQ

    arena, cached = arena_with_shards(tmp_path, private_shm)
    runs, generations = looked_up(cached)
    shards, rows = np.array([0, 1]), np.array([0, 0])
    assert collate_runs(arena, runs, generations, shards, rows, SEQ, FIXTURE_PAD, VOCAB, empty_batch(2, SEQ)) > 0
    never = np.array([-1, generations[1]])  # shard 0 never looked up
    assert collate_runs(arena, runs, never, shards, rows, SEQ, FIXTURE_PAD, VOCAB, empty_batch(2, SEQ)) == STALE
    arena.table[1, Field.GENERATION] += 1  # shard 1 evicted or rewritten since
    assert collate_runs(arena, runs, generations, shards, rows, SEQ, FIXTURE_PAD, VOCAB, empty_batch(2, SEQ)) == STALE
    arena.close()


def test_the_compiled_pass_refuses_offsets_outside_a_run(tmp_path, private_shm):
    from loaders.collate import BAD_ROW, collate_runs, empty_batch
    from tests.shard_fixtures import PAD as FIXTURE_PAD
    from tests.shard_fixtures import SEQ

    arena, cached = arena_with_shards(tmp_path, private_shm)
    runs, generations = looked_up(cached)
    out = empty_batch(2, SEQ)
    past_the_end = np.array([0, len(cached[1].arrays.token_offsets)])
    bad = BAD_ROW
    assert collate_runs(arena, runs, generations, np.array([0, 1]), past_the_end, SEQ, FIXTURE_PAD, VOCAB, out) == bad
    assert collate_runs(arena, runs, generations, np.array([0, 2]), np.array([0, 0]), SEQ, FIXTURE_PAD, VOCAB,
                        out) == BAD_ROW  # no shard 2
    cached[0].arrays.cu_offsets[1] = 10**9  # as a run rewritten under the reader would look
    assert collate_runs(arena, runs, generations, np.array([0, 0]), np.array([0, 0]), SEQ, FIXTURE_PAD, VOCAB,
                        out) == BAD_ROW
    arena.close()


def test_the_compiled_pass_never_reads_outside_the_arena_nor_writes_outside_its_outputs(tmp_path, private_shm):
    from loaders.collate import BAD_ROW, collate_runs, empty_batch
    from tests.shard_fixtures import PAD as FIXTURE_PAD
    from tests.shard_fixtures import SEQ

    arena, cached = arena_with_shards(tmp_path, private_shm)
    runs, generations = looked_up(cached)
    size = len(arena.memory)
    base, rows, tokens, cu = cached[0].run
    one = (np.array([0]), np.array([0]))
    for run in [(size, rows, tokens, cu), (base, rows, size, cu), (base, 2**62, tokens, cu), (-8, rows, tokens, cu),
                (base + 4, rows, tokens, cu), (base, rows, tokens, -1)]:
        bad = runs.copy()
        bad[0] = run
        assert collate_runs(arena, bad, generations, *one, SEQ, FIXTURE_PAD, VOCAB, empty_batch(1, SEQ)) == BAD_ROW, run
    too_short = empty_batch(1, SEQ)
    too_short["labels"] = too_short["labels"][:, :SEQ // 2].copy()
    with pytest.raises(ValueError, match="labels"):
        collate_runs(arena, runs, generations, *one, SEQ, FIXTURE_PAD, VOCAB, too_short)
    with pytest.raises(ValueError, match="input_ids"):  # one row past the end of `out`
        collate_runs(arena, runs, generations, *one, SEQ, FIXTURE_PAD, VOCAB, empty_batch(1, SEQ), 1)
    with pytest.raises(ValueError, match="runs"):  # a run for each shard of the table
        collate_runs(arena, runs[:1], generations, *one, SEQ, FIXTURE_PAD, VOCAB, empty_batch(1, SEQ))
    arena.close()
