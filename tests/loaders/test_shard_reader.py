"""L3: shards read back exactly into L2, locally and through fsspec (cached), and every kind of
damage raises an error naming the shard."""

import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from loaders.arrow_ipc import shard_layout
from loaders.shard_reader import (
    CompressedShard,
    DecodedShard,
    Prefetcher,
    RecordBatchReader,
    ShardArrays,
    ShardError,
    ShardSource,
    read_shard,
)
from loaders.shm_arena import SharedArena, arena_key, entry_bytes, run_views
from schemas.shards import SHARD_SCHEMA, file_checksum, read_checked_shard, shard_name
from schemas.validate import validate
from tests.conftest import REPO, within
from tests.loaders.served_fs import ServedFileSystem, serve
from tests.shard_fixtures import write_shards, write_text_shards


def arena_for(source, folder):
    return SharedArena(arena_key(source.location, source.index), len(source.entries), 1 << 24, folder)


def decode(source, shard, arena):
    return arena.fill(shard, lambda: read_shard(source, shard))[0]


def unpacked(contents) -> ShardArrays:
    """What read_shard's contents write into L2, written into a plain buffer laid out as an L2 run."""
    buffer = bytearray(entry_bytes(contents.rows, contents.tokens, contents.cu))
    run = run_views(buffer, 0, contents.rows, contents.tokens, contents.cu)
    contents.write_into(run)
    return run


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
    assert unpacked(read_shard(source, 1)).row(0)[0].tolist() == decoded.arrays.row(0)[0].tolist()
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


def pyarrows_contents(source, shard) -> DecodedShard:
    entry = source.entries[shard]
    table = read_checked_shard(source.local_path(shard), entry)
    return DecodedShard([ShardArrays.of_batch(batch) for batch in table.to_batches()])


def test_shards_the_job_writes_are_decompressed_straight_into_l2_as_pyarrow_reads_them(tmp_path):
    write_text_shards(tmp_path, parts=2)
    source = ShardSource(str(tmp_path))
    for shard in range(2):
        contents = read_shard(source, shard)
        assert isinstance(contents, CompressedShard) and len(contents.batches) > 1
        ours, theirs = unpacked(contents), unpacked(pyarrows_contents(source, shard))
        assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(ours, theirs))
        assert contents.mapped.closed  # the one mapping of the file, closed once written (nothing held it)


def replace_shard(folder, shard, table, **options):
    """Shard `shard` rewritten as `table` with IPC write `options`, its index entry made to match."""
    path = folder / shard_name(shard)
    with pa.ipc.new_file(str(path), table.schema, options=pa.ipc.IpcWriteOptions(**options)) as writer:
        writer.write_table(table)
    tokens = sum(int(chunk.offsets[-1].as_py() - chunk.offsets[0].as_py()) for chunk in table.column(0).chunks)
    real = sum(c[-1] for c in table.column(1).to_pylist())
    reindex(folder, shard, rows=table.num_rows, tokens=tokens, real_tokens=real,
            batch_rows=[batch.num_rows for batch in table.to_batches()])


def reindex(folder, shard, **fields):
    """The index entry of shard `shard` made to match its file (which then passes the size and checksum)."""
    path = folder / shard_name(shard)
    index = json.loads((folder / "index.json").read_text())
    index["shards"][shard].update(bytes=path.stat().st_size, checksum=file_checksum(path), **fields)
    (folder / "index.json").write_text(json.dumps(index))


def test_a_shard_of_another_layout_is_read_by_pyarrow(tmp_path):
    write_shards(tmp_path)
    rows = rows_of(tmp_path, 1)
    replace_shard(tmp_path, 1, pa.ipc.open_file(pa.memory_map(str(tmp_path / shard_name(1)))).read_all())  # plain
    contents = read_shard(ShardSource(str(tmp_path)), 1)
    assert isinstance(contents, DecodedShard)
    run = unpacked(contents)
    assert [(t.tolist(), c.tolist()) for t, c in map(run.row, range(len(rows)))] == rows


def test_damage_behind_a_valid_checksum_raises_an_error_naming_the_shard(tmp_path, private_shm):
    write_shards(tmp_path)
    falling = pa.ListArray.from_arrays(pa.array(np.array([0, 256, 128, 384], np.int32)),  # counts that add up
                                       pa.array(np.arange(384, dtype=np.uint32)))
    cu = pa.array([[0, 128], [0, 128], [0, 128]], pa.list_(pa.int32()))
    replace_shard(tmp_path, 1, pa.Table.from_arrays([falling, cu], schema=SHARD_SCHEMA), compression="zstd")
    source = ShardSource(str(tmp_path))
    with pytest.raises(ShardError, match=f"{shard_name(1)}: record batch 0 has list offsets that do not rise"):
        unpacked(read_shard(source, 1))
    with pytest.raises(ShardError, match=shard_name(1)):  # through L2, as the loader meets it
        decode(source, 1, arena_for(source, private_shm))

    write_shards(tmp_path)  # a zstd frame that does not decode: its magic number overwritten
    path = tmp_path / shard_name(1)
    with open(path, "rb") as f:
        tokens = shard_layout(memoryview(f.read()))[0].tokens.data
    data = bytearray(path.read_bytes())
    data[tokens.offset:tokens.offset + 4] = b"\0\0\0\0"
    path.write_bytes(bytes(data))
    reindex(tmp_path, 1)
    with pytest.raises(ShardError, match=shard_name(1)):
        unpacked(read_shard(ShardSource(str(tmp_path)), 1))


def served(tmp_path, change=None) -> str:
    """Shards written here and served through fsspec's memory filesystem as a bucket would serve them,
    their index first changed by `change`; returns the URL."""
    import fsspec

    made = tmp_path / "made"
    write_shards(made)
    index = json.loads((made / "index.json").read_text())
    if change is not None:
        change(index)
    memory, root = fsspec.filesystem("memory"), f"/served-{tmp_path.name}"
    for path in made.iterdir():
        memory.pipe(f"{root}/{path.name}", path.read_bytes())
    memory.pipe(f"{root}/index.json", json.dumps(index).encode())
    return f"memory://{root.lstrip('/')}"


@pytest.mark.parametrize("name", ["../../../../.bashrc", "/tmp/absolute.arrow", "sub/shard-00000.arrow", "..", "",
                                  "a\\b.arrow", 7])
def test_a_shard_file_name_from_an_index_is_a_plain_name_remote_or_local(tmp_path, name):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("mine")

    def rename(index):
        index["shards"][0]["file"] = name

    url = served(tmp_path, rename)
    with pytest.raises(ShardError, match=r"shards\[0\]: file.*(not a plain file name|must be a file name)"):
        ShardSource(url, cache_dir=str(home / ".cache" / "tokenmill"))
    assert (home / ".bashrc").read_text() == "mine"
    index = json.loads((tmp_path / "made" / "index.json").read_text())
    rename(index)
    (tmp_path / "made" / "index.json").write_text(json.dumps(index))
    with pytest.raises(ShardError, match=r"shards\[0\]: file"):
        ShardSource(str(tmp_path / "made"))


@pytest.mark.parametrize("change, words", [
    (lambda index: index["shards"][0].update(rows=10**9), "tokens cannot fill 1000000000 rows"),
    (lambda index: index["shards"][0].update(rows="5"), "must be counts"),
    # counts that agree, each past what an int64 holds (numpy sizes arrays with them)
    (lambda index: (index["shards"][0].update(rows=2**70, tokens=128 * 2**70, real_tokens=128 * 2**70),
                    index["shards"][0].pop("batch_rows")), "must be counts"),
    (lambda index: index.update(seq_len=2**64 * 128), "seq_len .* must be a positive multiple of 128"),
    (lambda index: index["shards"][0].update(tokens=-128), "must be counts"),
    (lambda index: index["shards"][0].update(real_tokens=10**12), "real tokens"),
    (lambda index: index["shards"][0].update(batch_rows=[1, 2]), "batch_rows"),
    (lambda index: index.update(shards=[]), "lists no shards"),
    (lambda index: index.update(shards={}), "shards must be a list"),
    (lambda index: index.update(seq_len=0), "seq_len 0 must be a positive multiple of 128"),
    (lambda index: index.update(embedding_size=100), "embedding_size 100"),
    (lambda index: index.update(pad_id=5000), "pad_id 5000 is not an id"),
    (lambda index: index["shards"].append(dict(index["shards"][0])), "listed twice"),
    (lambda index: index["totals"].pop("documents"), "totals must be an object of counts"),
    (lambda index: index.update(totals=[]), "totals must be an object of counts"),
    # fields that size nothing but are logged, written to JSON and compared across ranks at the start of
    # training (a float past a float's range, a NaN, an int for a string made jobs.train fail with a traceback)
    (lambda index: index["totals"].update(quarantined=float("inf")), "totals must be an object of counts"),
    (lambda index: index["totals"].update(bytes_per_token=float("nan")), "finite numbers"),
    (lambda index: index.update(compression_level=float("nan")), "compression_level must be a zstd level"),
    (lambda index: index.update(compression_level=True), "compression_level must be a zstd level"),
    (lambda index: index.update(tokenizer_sha256=5), "tokenizer_sha256 must be 64 lowercase hex digits"),
    (lambda index: index.update(compression=[[[]]]), "compression must be 'zstd'"),
    (lambda index: index.update(quarantine_checksum={"a": 1}), "quarantine_checksum must be a string"),
    (lambda index: index.update(embedding_size=float(index["embedding_size"])), "embedding_size"),
])
def test_numbers_of_an_index_are_checked_before_they_size_anything(tmp_path, change, words):
    with pytest.raises(ShardError, match=words):
        ShardSource(served(tmp_path, change), cache_dir=str(tmp_path / "cache"))


def test_counts_that_agree_but_exceed_the_free_space_are_refused_before_anything_is_allocated(tmp_path):
    from loaders.shard_loader import ShardLoader
    from loaders.shm_arena import ArenaTooSmall

    def huge(index):  # a billion rows of 128 tokens: counts that add up, to size a multi-terabyte cache
        index["shards"][0].update(rows=10**9, tokens=128 * 10**9, real_tokens=128 * 10**9)
        index["shards"][0].pop("batch_rows")

    url = served(tmp_path, huge)
    with pytest.raises(ArenaTooSmall, match="more than .* have free"):
        ShardLoader(url, 8, cache_dir=str(tmp_path / "cache"))
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]


def test_two_fetchers_of_one_remote_shard_both_succeed(tmp_path, monkeypatch):
    """Ranks on one node fetch the same shard into one cache at the same moment."""
    import threading

    url = served(tmp_path)
    sources = [ShardSource(url, cache_dir=str(tmp_path / "cache")) for _ in range(2)]
    opening = threading.Barrier(2, timeout=30)
    memory = sources[0].fs

    def open_together(path, *_args, **_kwargs):  # both have their part file before either renames its own
        opening.wait()
        return io.BytesIO(memory.cat_file(path))  # memory:// files are one shared stream: each reads a copy

    monkeypatch.setattr(memory, "open", open_together)  # fsspec's instance, shared by both sources
    results, errors = [None, None], []

    def fetch(i):
        try:
            results[i] = sources[i].local_path(1)
        except Exception as e:  # noqa: BLE001  (the test reports whatever a fetcher met)
            errors.append(e)

    threads = [threading.Thread(target=fetch, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and results[0] == results[1]
    assert file_checksum(results[0]) == sources[0].entries[1].checksum
    assert sorted(p.name for p in results[0].parent.iterdir()) == [shard_name(1)]  # no copy left behind


def test_a_fetched_shard_that_does_not_match_its_entry_never_enters_the_cache(tmp_path):
    import fsspec

    url = served(tmp_path)
    fsspec.filesystem("memory").pipe(f"/served-{tmp_path.name}/{shard_name(1)}", b"x" * 100)
    source = ShardSource(url, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(ShardError, match=f"{shard_name(1)}: fetched 100 bytes"):
        source.local_path(1)
    assert list(source.cache.iterdir()) == []


# -- a hostile store: objects larger than their entries, fetches killed midway, caches of other URLs ----------------


def made(tmp_path, change=None, name="made", seed=0) -> Path:
    """Shards written into tmp_path/name, their index first changed by `change`."""
    write_shards(tmp_path / name, seed=seed)
    if change is not None:
        index = json.loads((tmp_path / name / "index.json").read_text())
        change(index)
        (tmp_path / name / "index.json").write_text(json.dumps(index))
    return tmp_path / name


def test_a_remote_shard_served_larger_than_its_entry_is_read_one_byte_past_it_and_no_further(tmp_path):
    """A store serving 64 MiB where the index says a few KiB: the fetch stops one byte past the entry,
    names the shard, and leaves nothing in the cache."""
    url = serve(made(tmp_path), lies={shard_name(1): 64 << 20})
    source = ShardSource(url, cache_dir=str(tmp_path / "cache"))
    ServedFileSystem.served = 0
    with pytest.raises(ShardError, match=f"{shard_name(1)}: larger than the index says"):
        source.local_path(1)
    assert ServedFileSystem.served <= source.entries[1].bytes + 1
    assert list(source.cache.iterdir()) == []


def test_a_remote_shard_larger_than_the_cache_has_free_is_refused_before_it_is_fetched(tmp_path):
    url = serve(made(tmp_path, lambda index: index["shards"][1].update(bytes=1 << 60)))
    source = ShardSource(url, cache_dir=str(tmp_path / "cache"))
    ServedFileSystem.served = 0
    words = rf"{shard_name(1)}: {1 << 60} bytes to fetch into {re.escape(str(source.cache))}, which has \d+ bytes free"
    with pytest.raises(ShardError, match=words):
        source.local_path(1)
    assert ServedFileSystem.served == 0 and list(source.cache.iterdir()) == []


def test_an_index_larger_than_an_index_may_be_is_read_no_further(tmp_path):
    from schemas.index import MAX_INDEX_BYTES

    url = serve(made(tmp_path), lies={"index.json": MAX_INDEX_BYTES + (1 << 20)})
    ServedFileSystem.served = 0
    with pytest.raises(ShardError, match="index.json: larger than"):
        ShardSource(url, cache_dir=str(tmp_path / "cache"))
    assert ServedFileSystem.served <= MAX_INDEX_BYTES + 1


def test_a_fetch_killed_midway_leaves_a_part_that_the_next_start_removes_once_its_writer_is_dead(tmp_path):
    folder, bucket, cache = made(tmp_path), f"stall-{uuid.uuid4().hex[:8]}", tmp_path / "cache"
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from pathlib import Path
        from loaders.shard_reader import ShardSource
        from tests.loaders.served_fs import serve
        url = serve(Path({str(folder)!r}), {bucket!r}, stalls=[{shard_name(1)!r}])
        ShardSource(url, cache_dir={str(cache)!r}).local_path(1)
        """)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "STALLED"
        parts = list(cache.rglob("*.part"))
        assert len(parts) == 1
        url = serve(folder, bucket)
        ShardSource(url, cache_dir=str(cache))  # a start while the fetch is alive: its part is kept
        assert parts[0].exists()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    source = ShardSource(url, cache_dir=str(cache))  # the next start
    assert not parts[0].exists() and list(source.cache.iterdir()) == []
    assert file_checksum(source.local_path(1)) == source.entries[1].checksum


def test_sources_whose_urls_differ_only_in_their_slashes_or_protocol_have_caches_of_their_own(tmp_path):
    """s3://b/x_y/s and s3://b/x/y_s were one cache folder: the second source read the first's shards as
    corrupt, for good."""
    import fsspec

    key, cache = uuid.uuid4().hex[:8], str(tmp_path / "cache")
    made(tmp_path / "a", name="s", seed=1)
    made(tmp_path / "b", name="y_s", seed=2)
    first = ShardSource(serve(tmp_path / "a", bucket=f"{key}_y") + "/s", cache_dir=cache)
    second = ShardSource(serve(tmp_path / "b", bucket=key) + "/y_s", cache_dir=cache)
    memory = fsspec.filesystem("memory")
    for path in (tmp_path / "b" / "y_s").iterdir():
        memory.pipe(f"/{key}/y_s/{path.name}", path.read_bytes())
    third = ShardSource(f"memory://{key}/y_s", cache_dir=cache)
    assert len({first.cache, second.cache, third.cache}) == 3
    for source, folder in ((first, tmp_path / "a" / "s"), (second, tmp_path / "b" / "y_s"),
                           (third, tmp_path / "b" / "y_s")):
        for shard in range(len(source.entries)):
            assert unpacked(read_shard(source, shard)).row(0)[0].tolist() == rows_of(folder, shard)[0][0]


def test_an_index_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    # a FIFO's open waits for a writer that never comes: the loader hung at its start
    os.mkfifo(tmp_path / "index.json")
    with within(10), pytest.raises(ShardError, match="index.json: not a regular file"):
        ShardSource(str(tmp_path))
    with within(10):
        (problem,) = validate(tmp_path)
    assert problem.startswith(f"{tmp_path}/index.json: not a regular file")


def test_a_gzipped_index_says_so(tmp_path):
    """A web server that ignores the request for no encoding sends index.json gzipped: it had been "not JSON:
    'utf-8' codec can't decode byte 0x8b"."""
    import gzip

    (tmp_path / "index.json").write_bytes(gzip.compress(b'{"format_version": 1}'))
    with pytest.raises(ShardError, match="index.json: not JSON: gzip-compressed"):
        ShardSource(str(tmp_path))
    assert "gzip-compressed" in validate(tmp_path)[0]


def test_an_index_with_a_key_twice_says_so_not_that_it_is_not_json(tmp_path):
    (tmp_path / "index.json").write_text('{"format_version": 1, "shards": [], "shards": []}')
    with pytest.raises(ShardError, match="index.json: the key 'shards' is given twice in one object"):
        ShardSource(str(tmp_path))


def _batch_rows(folder: Path, change) -> None:
    index = json.loads((folder / "index.json").read_text())
    index["shards"][0]["batch_rows"] = change(index["shards"][0]["batch_rows"])
    (folder / "index.json").write_text(json.dumps(index))


def test_record_batches_of_other_rows_than_the_index_lists_are_refused_on_both_paths(tmp_path):
    """The index's batch_rows with the same sum, [3, 5, ...] for [4, 4, ...]: the reader of single record
    batches (the first batch after a start or resume) served row r + 1 for row r, and another row than the
    whole shard's path, so that a resume no longer repeated the run."""
    write_shards(tmp_path, parts=1, batch_bytes=8 << 10)
    _batch_rows(tmp_path, lambda rows: [rows[0] - 1, rows[1] + 1, *rows[2:]])
    source = ShardSource(str(tmp_path))
    with pytest.raises(ShardError, match="record batch 0 holds 4 rows, index says 3"):
        read_shard(source, 0)
    with pytest.raises(ShardError, match="record batch 0 holds 4 rows, index says 3"):
        RecordBatchReader(source).row(0, 0)


def _negative_count_shard(folder: Path) -> None:
    """Shard 0 rewritten as 12 rows in record batches of 4, whose last batch's count of boundaries (and its
    buffer's size) makes the batches' counts add up to -1; its entry updated to match, checksum and all."""
    path, rows = folder / "shard-00000.arrow", 12
    table = pa.table({"tokens": [[5] * 512] * rows, "cu_seqlens": [list(range(513))] * rows}, schema=SHARD_SCHEMA)
    with pa.ipc.new_file(str(path), SHARD_SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table, max_chunksize=4)
    data = bytearray(path.read_bytes())
    with memoryview(data) as view:
        layouts = shard_layout(view)
    count = -sum(b.cu_seqlens.values for b in layouts[:-1]) - 1
    last = layouts[-1].cu_seqlens
    old = last.values.to_bytes(8, "little", signed=True)  # the FieldNode's length, as the message holds it
    at = data.rindex(old + (0).to_bytes(8, "little"), 0, last.data.offset)
    data[at:at + 8] = count.to_bytes(8, "little", signed=True)
    data[last.data.offset - 8:last.data.offset] = (4 * count).to_bytes(8, "little", signed=True)
    path.write_bytes(bytes(data))
    index = json.loads((folder / "index.json").read_text())
    index["shards"][0].update(rows=rows, tokens=512 * rows, real_tokens=512 * rows, bytes=len(data),
                              checksum=file_checksum(path), batch_rows=[4, 4, 4])
    (folder / "index.json").write_text(json.dumps(index))


def test_a_record_batch_count_below_zero_is_refused_and_the_shard_cached_beside_it_stays_as_it_was(tmp_path):
    """Counts that add up, one of them -1 in all: read as the count of an array from the cache's end, the
    earlier batches' boundaries were written past the shard's slot, over the next shard cached, which was
    still served as valid (its first token offsets became 304942678086, ...)."""
    (tmp_path / "arena").mkdir()
    write_shards(tmp_path / "s", parts=3)
    _negative_count_shard(tmp_path / "s")
    source = ShardSource(str(tmp_path / "s"))
    sizes = [entry_bytes(*(lambda c: (c.rows, c.tokens, c.cu))(read_shard(source, i))) for i in (1, 2)]
    arena = SharedArena(arena_key(source.location, source.index), 3, sum(sizes), tmp_path / "arena")
    try:
        arena.fill(1, lambda: read_shard(source, 1))
        cached, _ = arena.fill(2, lambda: read_shard(source, 2))
        arena.touch(2)  # shard 1 is the one to make room for shard 0
        before = [array.copy() for array in cached.arrays]
        with pytest.raises(ShardError, match="shard-00000.arrow"):
            arena.fill(0, lambda: read_shard(source, 0))
        assert arena.still_valid(cached) and all(np.array_equal(a, b) for a, b in zip(before, cached.arrays))
    finally:
        arena.close()
