"""L3: shards read back exactly into L2, locally and through fsspec (cached), and every kind of
damage raises an error naming the shard."""

import json

import numpy as np
import pyarrow as pa
import pytest

from loaders.shard_reader import Prefetcher, ShardError, ShardSource, read_shard
from loaders.shm_arena import SharedArena, arena_key
from schemas.shards import file_checksum, shard_name
from tests.shard_fixtures import write_shards


def arena_for(source, folder):
    return SharedArena(arena_key(source.location, source.index), len(source.entries), 1 << 24, folder)


def decode(source, shard, arena):
    return arena.fill(shard, lambda: read_shard(source, shard))[0]


def rows_of(folder, shard):
    with pa.memory_map(str(folder / shard_name(shard))) as source:
        table = pa.ipc.open_file(source).read_all()
    return list(zip(table.column("tokens").to_pylist(), table.column("cu_seqlens").to_pylist()))


def test_local_shards_decode_to_their_rows(tmp_path, private_shm):
    write_shards(tmp_path, parts=3)
    source = ShardSource(str(tmp_path))
    arena = arena_for(source, private_shm)
    for shard in range(3):
        decoded = decode(source, shard, arena)
        expected = rows_of(tmp_path, shard)
        assert len(decoded.arrays.token_offsets) == len(expected) + 1 and decoded.arrays.tokens.dtype == np.uint32
        for i, (tokens, cu) in enumerate(expected):
            got_tokens, got_cu = decoded.arrays.row(i)
            assert got_tokens.tolist() == tokens and got_cu.tolist() == cu


def test_remote_shards_are_fetched_once_into_the_cache(tmp_path, private_shm):
    import fsspec

    (tmp_path / "made").mkdir()
    write_shards(tmp_path / "made")
    memory = fsspec.filesystem("memory")
    for path in (tmp_path / "made").iterdir():
        memory.pipe(f"/bucket/shards/{path.name}", path.read_bytes())
    source = ShardSource("memory://bucket/shards", cache_dir=str(tmp_path / "cache"))
    decoded = decode(source, 1, arena_for(source, private_shm))
    assert decoded.arrays.row(0)[0].tolist() == rows_of(tmp_path / "made", 1)[0][0]
    cached = source.local_path(1)
    assert cached.is_file() and str(cached).startswith(str(tmp_path / "cache"))
    memory.rm("/bucket/shards/" + shard_name(1))  # now served from the cache
    assert read_shard(source, 1)[0].tokens[:4].tolist() == decoded.arrays.row(0)[0][:4].tolist()
    with pytest.raises(ShardError, match=f"{shard_name(0)}: missing"):
        memory.rm("/bucket/shards/" + shard_name(0))
        read_shard(source, 0)


def corrupt(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def not_arrow(path):
    """Junk that passes the size and checksum checks (the index is rewritten to match it)."""
    path.write_bytes(b"not an arrow file" * 64)
    index_path = path.parent / "index.json"
    index = json.loads(index_path.read_text())
    index["shards"][1].update(bytes=path.stat().st_size, checksum=file_checksum(path))
    index_path.write_text(json.dumps(index))


@pytest.mark.parametrize("damage, words", [
    (lambda p: p.unlink(), "missing"),
    (lambda p: p.write_bytes(p.read_bytes()[:-10]), "truncated"),
    (corrupt, "checksum mismatch"),
    (not_arrow, "not a readable Arrow IPC file"),
])
def test_damage_raises_an_error_naming_the_shard(tmp_path, private_shm, damage, words):
    write_shards(tmp_path)
    damage(tmp_path / shard_name(1))
    source = ShardSource(str(tmp_path))
    with pytest.raises(ShardError, match=f"{shard_name(1)}.*{words}"):
        read_shard(source, 1)
    arena = arena_for(source, private_shm)
    prefetcher = Prefetcher(source, arena)
    prefetcher.request(1)
    prefetcher.request(0)
    prefetcher.close()
    with pytest.raises(ShardError, match=shard_name(1)):  # raised where the data is needed
        decode(source, 1, arena)
    assert decode(source, 0, arena).arrays.tokens.size > 0 and arena.lookup(1) is None
    assert arena.decompressions == 1  # shard 0 once, by whichever thread came first


def test_a_folder_without_an_index_is_refused(tmp_path):
    with pytest.raises(ShardError, match="index.json: missing"):
        ShardSource(str(tmp_path))
