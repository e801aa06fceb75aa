"""Property-based fuzzing of benchmark files and of items against documents: a benchmark file of any lines is
read into items and counts of skipped records by reason, or is one clear error; any items against any
documents finish within the matching budget, each document kept or dropped with its reason."""

import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.decontam.documents import REASON, STATUS, DecontamConfig, decontaminate_batch
from prep.decontam.index import IndexConfig, build_index
from prep.decontam.items import ItemsConfig, read_benchmark
from prep.decontam.match import MatchConfig
from prep.ingest.inputs import InputError

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])
WORDS = ["which", "of", "the", "following", "is", "true", "about", "Debian", "a", "中", "文", "🙂", "\u0301", "1"]
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                       max_size=3), max_leaves=10)


@st.composite
def benchmark_lines(draw) -> list[bytes]:
    lines = []
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            lines.append(json.dumps(draw(st.dictionaries(st.sampled_from(["text", "id", "question", "choices"]),
                                                          JSON_VALUES, max_size=4))).encode())
        elif kind == 1:
            lines.append(draw(st.binary(max_size=60)).replace(b"\n", b" "))
        elif kind == 2:
            lines.append(b'{"id": ' + b"[" * 50_000 + b"]" * 50_000 + b', "text": "deep id"}')
        else:
            lines.append(json.dumps({"text": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=40)))}).encode())
    return lines


@FUZZ
@given(benchmark_lines())
def test_any_benchmark_file_is_items_and_skipped_records_or_one_clear_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("items") / "bench.jsonl"
    path.write_bytes(b"\n".join(lines))
    try:
        benchmark = read_benchmark("fuzz", str(path), ItemsConfig())
    except InputError as e:
        assert "fuzz" in str(e)
        return
    assert all(isinstance(i, str) and isinstance(t, str) for i, t in benchmark.items)
    assert len(benchmark.items) + sum(benchmark.skipped.values()) == sum(bool(line.strip()) for line in lines)


TEXTS = st.lists(st.sampled_from(WORDS), min_size=0, max_size=60).map(" ".join) | st.sampled_from(
    ["a " * 3000, "which of the following is " * 500, "中" * 4000, ""])


@FUZZ
@given(st.lists(TEXTS, min_size=1, max_size=8), st.lists(TEXTS, min_size=1, max_size=6))
def test_any_items_against_any_documents_finish_within_the_budget(items, docs):
    index = build_index([("b", str(i), text) for i, text in enumerate(items)], IndexConfig())
    cfg = DecontamConfig(match=MatchConfig(max_seed_hits=200_000, max_hits=20_000, max_alignment_cells=2_000_000))
    out = decontaminate_batch(pa.record_batch({"id": [str(i) for i in range(len(docs))], "text": docs}), index,
                              cfg).to_pylist()
    assert len(out) == len(docs)
    for row in out:
        assert row[STATUS] in ("kept", "dropped")
        assert (row[STATUS] == "dropped") == (row[REASON] in (
            "too_many_matches", "too_short_after_removal", "matches_left_after_removal", "over_match_budget"))
