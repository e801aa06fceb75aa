"""ShardLoader: the same global stream at any world size, exact and elastic resume, errors that
name the shard, and counters."""

import json

import numpy as np
import pytest
import torch

from loaders.collate import IGNORE
from loaders.shard_loader import ShardLoader
from loaders.shard_reader import ShardError
from loaders.shm_arena import entry_bytes, user_folder
from schemas.shards import shard_name
from tests.conftest import within
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
    for world in (2, 4):  # rank r of w reads its slice of every global batch, and only that
        per_rank = GLOBAL_BATCH // world
        for rank, loader in enumerate(make(path, world)):
            got = [next(loader)["sample_index"].tolist() for _ in range(3)]
            assert got == [list(range(s * GLOBAL_BATCH + rank * per_rank, s * GLOBAL_BATCH + (rank + 1) * per_rank))
                           for s in range(3)]
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


def test_a_state_of_another_version_is_refused(shards):
    path, _ = shards
    loader = make(path, 1)[0]
    state = loader.state_dict()
    with pytest.raises(ValueError, match="loader state version 1, this loader reads 2"):
        make(path, 1)[0].load_state_dict({**state, "version": 1})


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


def test_counters_count_decompressions_hits_and_blocked_time(shards):
    path, rows = shards
    loader = ShardLoader(path, GLOBAL_BATCH, seed=3)
    for _ in range(rows // GLOBAL_BATCH):
        next(loader)
    stats = loader.stats()
    assert stats["decompressions"] == stats["node_decompressions"] == 2  # each shard once
    assert stats["bytes_decompressed"] > 0 and stats["blocked_seconds"] > 0 and stats["batches"] == rows // GLOBAL_BATCH
    # Each shard looked up at least once; whether the prefetcher had it in L2 first (a hit) or the
    # reader waited for it (a miss) depends on the machine's load, so only the sum is fixed.
    assert stats["cache_hits"] + stats["cache_misses"] >= 2
    other = ShardLoader(path, GLOBAL_BATCH, seed=4)  # another reader on the node: served from L2
    for _ in range(rows // GLOBAL_BATCH):
        next(other)
    assert other.stats()["decompressions"] == 0 and other.stats()["node_decompressions"] == 2
    assert other.stats()["cache_misses"] == 0 and other.stats()["cache_hits"] >= 2


def test_a_shard_a_prefetch_thread_decompressed_is_counted_before_the_reader_can_have_it(shards, monkeypatch):
    # the thread counted it after the arena published it: a reader that had used it (a loaded machine: the
    # thread not yet run again) read 1 decompression of its own against the node's 2
    import threading
    import time

    from loaders.shm_arena import SharedArena

    path, rows = shards
    fill = SharedArena.fill

    def descheduled_after_the_fill(self, shard, decode):
        filled = fill(self, shard, decode)
        if threading.current_thread().name.startswith("tokenmill-l3"):
            time.sleep(1)  # what the scheduler may do to the thread here
        return filled

    monkeypatch.setattr(SharedArena, "fill", descheduled_after_the_fill)
    loader = ShardLoader(path, GLOBAL_BATCH, seed=3)
    for _ in range(rows // GLOBAL_BATCH):
        next(loader)
    stats = loader.stats()
    assert stats["decompressions"] == stats["node_decompressions"] == 2
    assert stats["bytes_decompressed"] > 0
    loader.close()


def test_the_first_batch_reads_record_batches_without_waiting_for_whole_shards(shards):
    path, _ = shards
    with ShardLoader(path, GLOBAL_BATCH, seed=3) as reference:
        expected = tokens(reference, 3)
    loader = ShardLoader(path, GLOBAL_BATCH, seed=3, prefetch_batches=0)
    requested = []
    loader.sets[0].fetcher.request = requested.append  # L3 gets the requests but fills nothing in the background
    first = next(loader)["input_ids"].tolist()
    assert loader.stats()["direct_rows"] == GLOBAL_BATCH and loader.stats()["node_decompressions"] == 0
    assert sorted(requested) == [0, 1]  # the first block's shards were asked for
    assert [first] + tokens(loader, 2) == expected  # then whole shards, decompressed on demand
    assert loader.stats()["decompressions"] == 2


def tokens(loader, steps):
    return [next(loader)["input_ids"].tolist() for _ in range(steps)]


def test_batches_do_not_depend_on_prefetch_depth_workers_or_cache_size(tmp_path):
    write_shards(tmp_path / "a", parts=10)
    reference = ShardLoader(str(tmp_path / "a"), GLOBAL_BATCH, seed=2, prefetch_batches=0, shuffle_block_shards=1)
    expected = tokens(reference, 30)  # two epochs and more
    # Another copy of the shards, so that nothing is in L2 yet: worker processes fill it.
    write_shards(tmp_path / "b", parts=10)
    with ShardLoader(str(tmp_path / "b"), GLOBAL_BATCH, seed=2, num_workers=2, prefetch_batches=3,
                     shuffle_block_shards=1) as workers:
        assert tokens(workers, 30) == expected
        assert workers.stats()["node_decompressions"] >= 10
    # A cache that holds 3 of the 10 shards: evicted shards are decompressed again, batches unchanged.
    write_shards(tmp_path / "c", parts=10)
    index = json.loads((tmp_path / "c" / "index.json").read_text())
    smallest = 3 * max(entry_bytes(e["rows"], e["tokens"], e["rows"] + e["tokens"] // 64) for e in index["shards"])
    with ShardLoader(str(tmp_path / "c"), GLOBAL_BATCH, seed=2, cache_bytes=smallest, shuffle_block_shards=1) as small:
        assert tokens(small, 30) == expected
        assert small.stats()["node_decompressions"] > 10
    with pytest.raises(ValueError, match="cache_bytes"):
        ShardLoader(str(tmp_path / "c"), GLOBAL_BATCH, cache_bytes=smallest // 2, shuffle_block_shards=1)


def test_without_the_built_kernel_numpy_gives_the_same_batches_and_a_warning_says_so(shards, monkeypatch):
    from loaders import shard_set

    path, rows = shards
    steps = rows // GLOBAL_BATCH + 2  # into the second epoch
    compiled = ShardLoader(path, GLOBAL_BATCH, seed=3)
    expected = [next(compiled) for _ in range(steps)]
    monkeypatch.setattr(shard_set, "KERNEL_BUILT", False)
    with pytest.warns(UserWarning, match="without a C compiler"):
        fallback = ShardLoader(path, GLOBAL_BATCH, seed=3)
    for want in expected:
        got = next(fallback)
        assert all(torch.equal(got[key], want[key]) for key in want)


def test_a_shard_rewritten_while_its_rows_are_copied_is_read_again(shards, monkeypatch):
    from loaders import shard_set
    from loaders.collate import CHANGED
    from loaders.shm_arena import Field

    path, _ = shards
    expected = tokens(ShardLoader(path, GLOBAL_BATCH, seed=3), 4)
    loader = ShardLoader(path, GLOBAL_BATCH, seed=3)
    real, changed = shard_set.collate_runs, []

    def rewritten_once(arena, *args):
        written = real(arena, *args)
        if written >= 0 and not changed:  # as the seqlock's second look sees an eviction and a rewrite
            changed.append(written)
            arena.table[:, Field.GENERATION] += 2
            return CHANGED
        return written

    monkeypatch.setattr(shard_set, "collate_runs", rewritten_once)
    assert tokens(loader, 4) == expected
    assert changed and loader.stats()["rereads"] == 1


def test_resume_after_prefetching_continues_from_the_batches_handed_out(shards):
    path, _ = shards
    ahead = ShardLoader(path, GLOBAL_BATCH, seed=3, prefetch_batches=4)
    tokens(ahead, 3)  # and four more collated ahead
    state = ahead.state_dict()
    resumed = ShardLoader(path, GLOBAL_BATCH, seed=3, prefetch_batches=0)
    resumed.load_state_dict(state)
    assert tokens(resumed, 5) == tokens(ahead, 5)


def test_a_small_shm_falls_back_to_a_disk_backed_arena(shards, tmp_path):
    path, rows = shards
    expected = tokens(ShardLoader(path, GLOBAL_BATCH, seed=3), 4)
    with pytest.warns(UserWarning, match="memory-mapped file"):
        loader = ShardLoader(path, GLOBAL_BATCH, seed=3, shm_dir=str(tmp_path / "no-shm"), cache_dir=str(tmp_path))
    assert loader.sets[0].arena.path.parent == tmp_path / "arena"
    assert tokens(loader, 4) == expected
    loader.close()
    assert not loader.sets[0].arena.path.exists()  # the last process to close removes it


def test_each_node_keeps_its_cache_where_tokenmill_shm_dir_says(shards, tmp_path, monkeypatch):
    path, _ = shards
    nodes = [tmp_path / "node0", tmp_path / "node1"]
    loaders = []
    for node in nodes:  # two "nodes" on one machine: two caches, each shard decompressed once in each
        node.mkdir()
        monkeypatch.setenv("TOKENMILL_SHM_DIR", str(node))
        loaders.append(ShardLoader(path, GLOBAL_BATCH, seed=3))
        assert loaders[-1].sets[0].arena.path.parent == user_folder(node)  # this user's folder in the node's shm
    for loader in loaders:
        tokens(loader, 6)
        assert loader.stats()["node_decompressions"] == 2  # the two shards, in this node's cache only
        loader.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the CPU ring is tested above)")
def test_the_gpu_ring_delivers_the_cpu_batches(shards):
    path, _ = shards
    cpu = ShardLoader(path, GLOBAL_BATCH, seed=3)
    gpu = ShardLoader(path, GLOBAL_BATCH, seed=3, device="cuda", prefetch_batches=3)
    for _ in range(12):
        expected, got = next(cpu), next(gpu)
        assert all(got[key].is_cuda and torch.equal(got[key].cpu(), expected[key]) for key in expected)


def write_bad_rows(folder, tokens, cu, rows=16):
    """Shards whose every row is (tokens, cu), with an index whose counts add up (a hostile index is
    consistent: only the rows show what is wrong)."""
    from tests.shard_fixtures import write_rows

    index = write_rows(folder, [tokens] * rows, [cu] * rows, 2, 4 << 10, tokenizer_sha256="0" * 64, vocab_size=1000,
                       seq_len=SEQ, pad_id=PAD, bos_id=0, eos_id=1, documents=rows)
    for entry in index["shards"]:
        entry["real_tokens"] = entry["tokens"]
    (folder / "index.json").write_text(json.dumps(index))


@pytest.mark.parametrize("tokens, cu, words", [
    (np.full(256, 5), [0, 300], "do not rise from 0 to at most the row's 256 tokens"),
    (np.full(256, 5), [10, 256], "do not rise from 0"),
    (np.full(256, 5), [0, 100, 50, 256], "do not rise from 0"),
    (np.full(256, 1000), [0, 256], "token id 1000 is not below the vocabulary size 1000"),
    (np.arange(256) * 100, [0, 256], "token id 25500 is not below"),
])
@pytest.mark.parametrize("kernel", [True, False])
def test_the_first_batch_and_every_later_one_refuse_the_same_rows(tmp_path, monkeypatch, tokens, cu, words, kernel):
    """The first batch (its rows read from their record batches) and later ones (the kernel, or NumPy
    where it is not built) refuse alike, naming the shard, the row and why."""
    from loaders import shard_set

    write_bad_rows(tmp_path, np.asarray(tokens, np.uint32), np.asarray(cu, np.int32))
    monkeypatch.setattr(shard_set, "KERNEL_BUILT", kernel)
    loader = ShardLoader(str(tmp_path), 4, seed=3, shuffle_block_shards=1)
    for _ in ("first batch", "a later batch"):
        with pytest.raises(ShardError, match=f"shard-0000[01].arrow: row [0-9]+: .*{words}"):
            next(loader)
    loader.close()


def test_a_record_batch_that_does_not_decompress_is_a_shard_error_in_the_first_batch(tmp_path):
    from loaders.arrow_ipc import shard_layout
    from schemas.shards import file_checksum

    write_shards(tmp_path, parts=1)
    path = tmp_path / shard_name(0)
    data = bytearray(path.read_bytes())
    for batch in shard_layout(memoryview(bytes(data))):  # every zstd frame's magic number overwritten
        data[batch.tokens.data.offset:batch.tokens.data.offset + 4] = b"\0\0\0\0"
    path.write_bytes(bytes(data))
    index = json.loads((tmp_path / "index.json").read_text())
    index["shards"][0].update(bytes=len(data), checksum=file_checksum(path))
    (tmp_path / "index.json").write_text(json.dumps(index))
    with pytest.raises(ShardError, match=f"{shard_name(0)}: record batch [0-9]+ cannot be read"):
        next(ShardLoader(str(tmp_path), 4, seed=3))


def test_a_skipped_stretch_is_passed_over_and_kept_in_the_state(shards):
    path, _ = shards
    whole = stream(make(path, 1), 10)
    loaders = make(path, 2)
    first = stream(loaders, 2)
    for loader in loaders:
        loader.skip(4 * GLOBAL_BATCH, 7 * GLOBAL_BATCH)  # batches 4, 5 and 6 never served
    assert first + stream(loaders, 5) == whole[:4 * GLOBAL_BATCH] + whole[7 * GLOBAL_BATCH:]
    assert loaders[0].served_position == 9 * GLOBAL_BATCH and loaders[0].position == 10 * GLOBAL_BATCH
    state = loaders[0].state_dict()
    assert state["skips"] == [[4 * GLOBAL_BATCH, 7 * GLOBAL_BATCH]]
    resumed = make(path, 1)[0]  # another world size, from a state saved before the stretch
    early = make(path, 2)
    stream(early, 2)
    for loader in early:
        loader.skip(4 * GLOBAL_BATCH, 7 * GLOBAL_BATCH)
    resumed.load_state_dict(early[0].state_dict())
    assert stream([resumed], 5) == whole[2 * GLOBAL_BATCH:4 * GLOBAL_BATCH] + whole[7 * GLOBAL_BATCH:]
    with pytest.raises(ValueError, match="whole global batches"):
        resumed.skip(3, 16)
    bad = dict(state, skips=[[16, 8]])
    with pytest.raises(ValueError, match="skips"):
        resumed.load_state_dict(bad)


def test_going_back_to_an_earlier_state_keeps_the_later_skips_when_asked(shards):
    path, _ = shards
    loader = make(path, 1)[0]
    saved = loader.state_dict()  # at position 0, no skips
    stream([loader], 2)
    loader.skip(3 * GLOBAL_BATCH, 4 * GLOBAL_BATCH)
    loader.load_state_dict(saved, keep_skips=True)
    assert loader.skips == [(3 * GLOBAL_BATCH, 4 * GLOBAL_BATCH)] and loader.position == 0
    loader.load_state_dict(saved)
    assert loader.skips == []


def test_a_stretch_of_a_trillion_batches_is_passed_over_in_one_step(shards):
    """Found by review (2026-12-07): skipped batches were stepped through one at a time, each looked up in
    the whole list of skips (a stretch of 10**12 batches: weeks). The batch after it is the one at its end."""
    path, _ = shards
    far = 10**12 * GLOBAL_BATCH
    loader = make(path, 1)[0]
    with within(60):
        loader.skip(0, far)
        skipped = stream([loader], 1)
    jumped = make(path, 1)[0]
    state = jumped.state_dict()
    jumped.load_state_dict({**state, "position": far, "sources": [{**s, "rows": far} for s in state["sources"]]})
    assert skipped == stream([jumped], 1) and loader.served_position == far


@pytest.mark.parametrize("change, message", [
    # found by review (2026-12-07): rows 3 at position 8 served rows 3-6 again as position 8; -800, 8.9 and "8"
    # were taken as positions; a short weights_since was cut by zip; others were KeyErrors and AttributeErrors
    (lambda s: {**s, "position": s["position"] + GLOBAL_BATCH}, "add up to"),
    (lambda s: {**s, "position": -GLOBAL_BATCH, "sources": [{**x, "rows": -GLOBAL_BATCH} for x in s["sources"]]},
     "position -"),
    (lambda s: {**s, "position": float(s["position"])}, r"position \d+\.0 "),
    (lambda s: {**s, "position": str(s["position"])}, "position '"),
    (lambda s: {**s, "position": True, "sources": [{**x, "rows": True} for x in s["sources"]]}, "position True"),
    (lambda s: {**s, "weights_since": {"position": 0, "rows": []}}, "weights_since"),
    (lambda s: {**s, "weights_since": {"position": 32, "rows": [32]}}, "weights_since"),
    (lambda s: {k: v for k, v in s.items() if k != "sources"}, "no list of sources"),
    (lambda s: [s], "version"),
    (lambda s: {**s, "skips": [[16, "32"]]}, "skips"),
    (lambda s: {**s, "weights": ["default"]}, "weights"),
])
def test_a_state_that_contradicts_itself_is_refused(shards, change, message):
    path, _ = shards
    loader = make(path, 1)[0]
    stream([loader], 1)
    with pytest.raises(ValueError, match=message):
        make(path, 1)[0].load_state_dict(change(loader.state_dict()))


def test_a_skip_the_state_could_not_hold_is_refused(shards):
    """Found by the second review (2026-12-07): skip(8.0, 16.0) was taken and the next batch failed (an
    IndexError), and the loader's own state with it, or with skip(0, 2**62), was refused at resume."""
    path, _ = shards
    loader = make(path, 1)[0]
    for start, end in ((float(GLOBAL_BATCH), 2.0 * GLOBAL_BATCH), (0, 2**62), (GLOBAL_BATCH, GLOBAL_BATCH)):
        with pytest.raises(ValueError, match="a skip is whole global batches"):
            loader.skip(start, end)
    loader.skip(GLOBAL_BATCH, 2 * GLOBAL_BATCH)
    stream([loader], 1)
    make(path, 1)[0].load_state_dict(loader.state_dict())


@pytest.mark.parametrize("settings", [{"batch_size": 4.0}, {"rank": 0.0}, {"seed": -1}, {"batch_size": True},
                                      {"world_size": 2.0}])
def test_arguments_that_are_not_whole_numbers_in_range_are_refused_at_once(shards, settings):
    """Found by review (2026-12-07): a float or -1 built the loader and failed at the first batch."""
    path, _ = shards
    with pytest.raises(ValueError, match="whole number"):
        ShardLoader(path, **{"batch_size": 4, **settings})
