"""ShardLoader: the same global stream at any world size, exact and elastic resume, errors that
name the shard, and counters."""

import numpy as np
import pytest
import torch

from loaders.collate import IGNORE
from loaders.shard_loader import ShardLoader
from loaders.shard_reader import ShardError
from schemas.shards import shard_name
from tests.shard_fixtures import PAD, SEQ, write_shards

GLOBAL_BATCH = 8


@pytest.fixture
def shards(tmp_path):
    index = write_shards(tmp_path)
    return str(tmp_path), index["totals"]["rows"]


def stream(loaders, steps):
    """sample_index of every row, ranks concatenated per step, over `steps` global batches."""
    out = []
    for _ in range(steps):
        out += [int(i) for loader in loaders for i in next(loader)["sample_index"]]
    return out


def make(path, world, **kw):
    return [ShardLoader(path, GLOBAL_BATCH // world, rank=r, world_size=world, seed=3, **kw) for r in range(world)]


def test_a_batch_has_the_promised_tensors(shards):
    path, _ = shards
    batch = next(ShardLoader(path, 4, seed=1))
    assert batch["input_ids"].shape == (4, SEQ) and batch["input_ids"].dtype == torch.int64
    assert batch["labels"].dtype == torch.int64 and batch["position_ids"].shape == (4, SEQ)
    assert batch["cu_seqlens"].dtype == torch.int32 and int(batch["cu_seqlens"][-1]) == 4 * SEQ
    assert batch["sample_index"].tolist() == [0, 1, 2, 3]
    assert bool((batch["labels"][batch["input_ids"] == PAD] == IGNORE).all())


def test_the_stream_is_the_same_at_any_world_size_and_epochs_reshuffle(shards):
    path, rows = shards
    steps = 2 * rows // GLOBAL_BATCH + 1  # past the end of the first epoch
    one, two, four = (stream(make(path, w), steps) for w in (1, 2, 4))
    assert one == two == four == list(range(steps * GLOBAL_BATCH))
    loader = ShardLoader(path, GLOBAL_BATCH, seed=3)
    seen = [tuple(next(loader)["input_ids"][0, :8].tolist()) for _ in range(steps)]
    assert len(set(seen)) > steps // 2  # real, varied rows (not one row repeated)


@pytest.mark.parametrize("resume_world", [1, 2, 4])
def test_resume_and_elastic_resume_continue_the_uninterrupted_stream(shards, resume_world):
    path, _ = shards
    uninterrupted = stream(make(path, 2), 9)
    first = make(path, 2)
    before = stream(first, 4)
    state = first[0].state_dict()
    assert state == first[1].state_dict() and len(str(state)) < 300
    resumed = make(path, resume_world)
    for loader in resumed:
        loader.load_state_dict(state)
    after = stream(resumed, 5)
    assert before + after == uninterrupted

    def tokens(loaders, steps):
        return [row for _ in range(steps) for loader in loaders for row in next(loader)["input_ids"].tolist()]

    straight = make(path, 1)
    stream(straight, 4)
    again = make(path, resume_world)
    for loader in again:
        loader.load_state_dict(state)
    assert tokens(again, 2) == tokens(straight, 2)  # the same rows, not only the same indices


def test_resume_refuses_another_global_batch_or_seed(shards):
    path, _ = shards
    state = ShardLoader(path, 4, world_size=2).state_dict()
    with pytest.raises(ValueError, match="global_batch_size"):
        ShardLoader(path, 4, world_size=1).load_state_dict(state)
    with pytest.raises(ValueError, match="seed"):
        ShardLoader(path, 4, world_size=2, seed=9).load_state_dict(state)


def test_a_corrupt_shard_raises_an_error_naming_it(shards):
    path, _ = shards
    from pathlib import Path

    target = Path(path) / shard_name(1)
    data = bytearray(target.read_bytes())
    data[100] ^= 0xFF
    target.write_bytes(bytes(data))
    loader = ShardLoader(path, GLOBAL_BATCH, seed=3)
    with pytest.raises(ShardError, match=shard_name(1)):
        for _ in range(100):
            next(loader)


def test_counters_count_decompressions_and_hits(shards):
    path, rows = shards
    loader = ShardLoader(path, GLOBAL_BATCH, seed=3)
    for _ in range(rows // GLOBAL_BATCH):
        next(loader)
    c = loader.counters
    assert c["decompressions"] == 2 and c["cache_misses"] == 2 and c["cache_hits"] == c["batches"] * 8 - 2
    assert c["bytes_decompressed"] > 0 and c["blocked_seconds"] > 0


def test_what_is_not_built_yet_is_refused_with_a_message(shards):
    path, _ = shards
    with pytest.raises(ValueError, match="shared-memory cache"):
        ShardLoader(path, 4, num_workers=2)
    with pytest.raises(ValueError, match="GPU ring"):
        ShardLoader(path, 4, device="cuda")
    assert np.all(next(ShardLoader(path, 2, device="cpu"))["sample_index"].numpy() == [0, 1])
