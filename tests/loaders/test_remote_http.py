"""Shards fetched from a web server (fsspec's http, aiohttp) that is a real one on 127.0.0.1: an honest server
is read and cached, and a server from elsewhere that lies, stalls, fails or changes its files costs a
ShardError naming the shard, in bounded time, memory and disk; never a traceback of the transport."""

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import xxhash

from loaders import shard_reader
from loaders.shard_reader import ShardError, ShardSource, read_shard
from tests.shard_fixtures import write_shards


class Store:
    """The shards folder served over HTTP/1.1; `odd[name]` answers for a file in its own way instead."""

    def __init__(self, folder):
        self.folder, self.odd, self.seen = folder, {}, []
        store = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - http.server's name
                name = self.path.rsplit("/", 1)[-1]
                store.seen.append((name, dict(self.headers)))
                if name in store.odd:
                    return store.odd[name](self)
                path = store.folder / name
                body = path.read_bytes() if path.is_file() else None
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *_):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/shards"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def store(tmp_path):
    write_shards(tmp_path / "shards")
    served = Store(tmp_path / "shards")
    yield served
    served.server.shutdown()


def test_an_honest_server_is_read_and_its_shards_cached_once(store, tmp_path):
    source = ShardSource(store.url, cache_dir=str(tmp_path / "cache"))
    for shard in range(len(source.entries)):
        read_shard(source, shard)
    fetched = [name for name, _ in store.seen if name.endswith(".arrow")]
    assert fetched == ["shard-00000.arrow", "shard-00001.arrow"]  # one request each, asked for at once
    assert all(headers.get("Accept-Encoding") == "identity" for _, headers in store.seen)
    again = ShardSource(store.url, cache_dir=str(tmp_path / "cache"))
    read_shard(again, 0)  # from the cache, checked once in this process
    assert [name for name, _ in store.seen if name.endswith(".arrow")] == fetched


def _endless(handler):  # a body with no length, that never ends
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    try:
        while True:
            handler.wfile.write(b"10000\r\n" + b"x" * 0x10000 + b"\r\n")
    except OSError:
        pass


def _gzip_bomb(handler):  # encoded although identity was asked for: 100 MB in 100 KB
    body = gzip.compress(b"\0" * 100_000_000, 1)
    handler.send_response(200)
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _fails(handler):
    handler.send_response(500)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def _cut(handler):  # a body shorter than its Content-Length, then the connection closed
    handler.send_response(200)
    handler.send_header("Content-Length", "100000")
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(b"x" * 100)
    handler.close_connection = True


def _stalls(handler):  # headers, then nothing
    handler.send_response(200)
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    handler.wfile.flush()
    threading.Event().wait(10)


@pytest.mark.parametrize("odd, says", [(_endless, "larger than the index says"), (_gzip_bomb, "larger than the index"),
                                       (_fails, "500"), (_cut, "cannot be fetched"),
                                       (_stalls, "cannot be fetched: .*Timeout")])
def test_a_server_that_lies_fails_or_stalls_costs_a_shard_error_naming_the_shard(store, tmp_path, monkeypatch, odd,
                                                                                   says):
    # fsspec's range reads read a 206 answer whole (an endless one, or 1.5 MB of gzip decoded: 3.2 GB), aiohttp
    # waits 300 s a request, and its errors (a 500, a cut body) are no OSErrors: tracebacks at the training start
    monkeypatch.setattr(shard_reader, "READ_SECONDS", 1)
    store.odd["shard-00001.arrow"] = odd
    source = ShardSource(store.url, cache_dir=str(tmp_path / "cache"))
    read_shard(source, 0)
    with pytest.raises(ShardError, match=f"shard-00001.arrow: .*{says}"):
        read_shard(source, 1)
    assert sorted(p.name for p in source.cache.iterdir()) == ["shard-00000.arrow"]  # nothing of it kept


def test_an_index_sent_in_pieces_without_a_length_is_read_whole(store, tmp_path):
    # a stream's read gives what has arrived: a 48 KB index was read as its first 24 KB, "not JSON"
    whole = (store.folder / "index.json").read_bytes()

    def pieces(handler):
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for at in range(0, len(whole), 100):
            piece = whole[at:at + 100]
            handler.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            handler.wfile.flush()
            threading.Event().wait(0.002)  # as a slow link sends it
        handler.wfile.write(b"0\r\n\r\n")

    store.odd["index.json"] = pieces
    assert len(ShardSource(store.url, cache_dir=str(tmp_path / "cache")).entries) == 2


def test_a_shard_the_store_published_again_is_fetched_again_not_refused_for_good(store, tmp_path):
    # the cached copy was reused on its size alone and refused on its checksum on every run after
    cache = str(tmp_path / "cache")
    read_shard(ShardSource(store.url, cache_dir=cache), 0)
    shard = store.folder / "shard-00000.arrow"
    data = bytearray(shard.read_bytes())
    data[6] ^= 1  # a padding byte after the Arrow magic: a valid file of other bytes, the same size
    shard.write_bytes(bytes(data))
    index = json.loads((store.folder / "index.json").read_text())
    index["shards"][0]["checksum"] = xxhash.xxh3_128(bytes(data)).hexdigest()
    (store.folder / "index.json").write_text(json.dumps(index))
    source = ShardSource(store.url, cache_dir=cache)
    read_shard(source, 0)
    assert (source.cache / "shard-00000.arrow").read_bytes() == bytes(data)
