"""index.json and mixture.json from elsewhere, fuzzed: a valid file with hostile values put in its
places (numbers of a million digits or exponents, NaN, URLs of every protocol, deep nesting, wrong
types), each read to its end, either read or refused with the reader's own error naming the problem;
no other exception escapes and nothing read is past the bounds."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loaders.mixture import Schedule, integer_weights
from loaders.shard_reader import ShardError, ShardSource
from schemas.mixture import MixtureError, new_mixture, read_mixture_file
from schemas.trust import INT64, REMOTE_PROTOCOLS
from tests.shard_fixtures import write_shards

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Raw JSON put in a file's places as written: numbers the parser must not convert, and every other type.
HOSTILE = st.sampled_from([
    "1e100000000", "-1e-100000000", "1" * 100_000, "-" + "9" * 5000, "NaN", "Infinity", "-Infinity", "1e400",
    str(2**63), str(2**64 * 128), "0.1", "-0", "0", "-128", "128", "1e30", "0.000000000000000000000000000000001",
    '"1e100000000"', '"1/3"', '"0x10"', '"lots"', '""', "null", "true", "[]", "{}", '{"a": 1}', "[1, 2]",
    "[" * 5000 + "]" * 5000, '"' + "x" * 100_000 + '"', '"local:///etc"', '"simplecache::file:///etc"',
    '"file:///etc"', '"memory://b/x"', '"s3://b/x"', '"https://h/x"', '"../up"', '"/etc"', '"a/b"',
    '"shard-00000.arrow"',
])


def leaves(value, path=()):
    """Every place in a JSON value: (path, value) for objects' values and lists' items, deepest last."""
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from leaves(inner, (*path, key))


@st.composite
def hostile_file(draw, valid: dict) -> bytes:
    """`valid` with a few of its places (not the root) replaced by raw hostile JSON."""
    places = [path for path, _ in leaves(valid) if path]
    data = json.loads(json.dumps(valid))
    raw = {}
    for number, path in enumerate(draw(st.lists(st.sampled_from(places), min_size=1, max_size=4, unique=True))):
        target = data
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = f"@@{number}@@"
        except (KeyError, IndexError, TypeError):  # inside a place replaced already
            continue
        raw[f'"@@{number}@@"'] = draw(HOSTILE)
    text = json.dumps(data)
    for placeholder, value in raw.items():
        text = text.replace(placeholder, value)
    return text.encode()


@pytest.fixture(scope="module")
def valid_index(tmp_path_factory) -> dict:
    return write_shards(tmp_path_factory.mktemp("shards"))


@FUZZ
@given(data=st.data())
def test_a_fuzzed_index_is_read_within_its_bounds_or_refused_naming_it(valid_index, tmp_path, data):
    folder = tmp_path / "fuzzed"
    folder.mkdir(exist_ok=True)
    (folder / "index.json").write_bytes(data.draw(hostile_file(valid_index)))
    try:
        source = ShardSource(str(folder))
    except ShardError as e:
        assert str(folder / "index.json") in str(e)
        return
    index = source.index
    for value in (index.vocab_size, index.embedding_size, index.seq_len, index.pad_id, index.bos_id, index.eos_id):
        assert isinstance(value, int) and 0 <= value < INT64
    for entry in source.entries:
        assert all(isinstance(n, int) and 0 <= n < INT64 for n in (entry.rows, entry.tokens, entry.real_tokens,
                                                                      entry.bytes))
        assert "/" not in entry.file and entry.file not in (".", "..")


@FUZZ
@given(data=st.data())
def test_a_fuzzed_mixture_is_read_within_its_bounds_or_refused_naming_it(tmp_path, data):
    valid = new_mixture({"web": ("web", 0.37, 240, 30720, "web/heldout"), "zh": ("zh", "0.5", 160, 20480),
                         "code": ("code", 13, 8, 1024)}).to_json()
    path = tmp_path / "mixture.json"
    path.write_bytes(data.draw(hostile_file(valid)))
    try:
        mixture = read_mixture_file(path)
    except MixtureError as e:
        assert str(path) in str(e) or "source " in str(e)
        return
    for name, source in mixture.sources.items():
        for which in ("path", "heldout") if source.heldout is not None else ("path",):
            location = mixture.location(path, name, which)
            protocol, separator, _ = location.partition("://")
            assert (separator and protocol in REMOTE_PROTOCOLS and "::" not in location) or (
                not separator and Path(location).resolve().is_relative_to(tmp_path))
        assert all(isinstance(n, int) and 0 <= n < INT64 for n in (source.rows, source.tokens))
    try:
        weights = integer_weights({name: source.weight for name, source in mixture.sources.items()})
    except MixtureError as e:  # weights each in bounds whose exact ratios together are not (1e19 beside 0.37)
        assert "past 2^63 in all" in str(e)
        return
    assert all(0 < w < 2**63 for w in weights.values())
    assert sum(Schedule(list(weights.values())).rows([0] * len(weights), 64)) == 64


def test_a_mixture_naming_a_source_twice_says_so_not_that_it_is_not_json(tmp_path):
    path = tmp_path / "mixture.json"
    path.write_text('{"format_version": 1, "sources": {"web": {"path": "a"}, "web": {"path": "b"}}}')
    with pytest.raises(MixtureError, match=r"mixture.json: the key 'web' is given twice in one object$"):
        read_mixture_file(path)
