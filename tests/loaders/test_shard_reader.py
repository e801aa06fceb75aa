"""L3: shards read back exactly, locally and through fsspec (cached), and every kind of damage
raises an error naming the shard."""

import numpy as np
import pyarrow as pa
import pytest

from loaders.shard_reader import Prefetcher, ShardError, ShardSource, read_shard
from schemas.shards import shard_name
from tests.shard_fixtures import write_shards


def rows_of(folder, shard):
    with pa.memory_map(str(folder / shard_name(shard))) as source:
        table = pa.ipc.open_file(source).read_all()
    return list(zip(table.column("tokens").to_pylist(), table.column("cu_seqlens").to_pylist()))


def test_local_shards_decode_to_their_rows(tmp_path):
    write_shards(tmp_path)
    source = ShardSource(str(tmp_path))
    for shard in range(2):
        decoded = read_shard(source, shard)
        expected = rows_of(tmp_path, shard)
        assert len(decoded.token_offsets) == len(expected) + 1 and decoded.tokens.dtype == np.uint32
        for i, (tokens, cu) in enumerate(expected):
            got_tokens, got_cu = decoded.row(i)
            assert got_tokens.tolist() == tokens and got_cu.tolist() == cu


def test_remote_shards_are_fetched_once_into_the_cache(tmp_path):
    import fsspec

    (tmp_path / "made").mkdir()
    write_shards(tmp_path / "made")
    memory = fsspec.filesystem("memory")
    for path in (tmp_path / "made").iterdir():
        memory.pipe(f"/bucket/shards/{path.name}", path.read_bytes())
    source = ShardSource("memory://bucket/shards", cache_dir=str(tmp_path / "cache"))
    decoded = read_shard(source, 1)
    assert decoded.row(0)[0].tolist() == rows_of(tmp_path / "made", 1)[0][0]
    cached = source.local_path(1)
    assert cached.is_file() and str(cached).startswith(str(tmp_path / "cache"))
    memory.rm("/bucket/shards/" + shard_name(1))  # now served from the cache
    assert read_shard(source, 1).row(0)[0].tolist() == decoded.row(0)[0].tolist()
    with pytest.raises(ShardError, match=f"{shard_name(0)}: missing"):
        memory.rm("/bucket/shards/" + shard_name(0))
        read_shard(source, 0)


def corrupt(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, words", [
    (lambda p: p.unlink(), "missing"),
    (lambda p: p.write_bytes(p.read_bytes()[:-10]), "truncated"),
    (corrupt, "checksum mismatch"),
])
def test_damage_raises_an_error_naming_the_shard(tmp_path, damage, words):
    write_shards(tmp_path)
    source = ShardSource(str(tmp_path))
    damage(tmp_path / shard_name(1))
    with pytest.raises(ShardError, match=f"{shard_name(1)}.*{words}"):
        read_shard(source, 1)
    prefetcher = Prefetcher(source)
    prefetcher.request(1)
    with pytest.raises(ShardError, match=shard_name(1)):  # raised where the data is needed
        prefetcher.get(1)
    assert prefetcher.get(0).tokens.size > 0
    prefetcher.close()


def test_a_folder_without_an_index_is_refused(tmp_path):
    with pytest.raises(ShardError, match="index.json: missing"):
        ShardSource(str(tmp_path))
