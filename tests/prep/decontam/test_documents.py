"""Decontamination of real documents of the sample with benchmark items planted in them, English and
Chinese: every way of planting in FOUND is found and cut, the rest of the document kept; near misses and
clean documents pass unchanged, byte for byte."""

import random

import numpy as np
import pyarrow as pa
import pytest

from prep.decontam.cut import CutConfig
from prep.decontam.documents import CHARS_REMOVED, REASON, SPANS, STATUS, DecontamConfig, decontaminate_batch
from prep.decontam.index import IndexConfig, build_index
from prep.decontam.match import MatchConfig, find_matches
from prep.decontam.units import units_of
from tests.decontam_fixtures import FOUND, NEAR_MISSES, chinese_items, english_items, hosts, planted

PLANTED_PER_KIND = 6


@pytest.fixture(scope="module")
def planting():
    """(index, documents, what each is: (kind, language, item position or None), the planted text)."""
    rng = random.Random(7)
    english, chinese = english_items(60), chinese_items(60)
    items = [("faq", f"en-{i}", t) for i, t in enumerate(english)] + [("faq-zh", f"zh-{i}", t)
                                                                        for i, t in enumerate(chinese)]
    index = build_index(items, IndexConfig())
    docs, labels, texts = [], [], []
    for language, pool, host_pool in (("en", english, hosts(False)), ("zh", chinese, hosts(True))):
        offset = 0 if language == "en" else len(english)
        for n, kind in enumerate(FOUND + NEAR_MISSES):
            for k in range(PLANTED_PER_KIND):
                item = n * PLANTED_PER_KIND + k
                doc, text = planted(kind, pool[item], host_pool[item % len(host_pool)], rng, chinese=language == "zh")
                docs.append(doc)
                labels.append((kind, language, offset + item))
                texts.append(text)
        for host in host_pool[-10:]:
            docs.append(host)
            labels.append(("clean", language, None))
            texts.append("")
    return index, docs, labels, texts


def test_every_planting_is_found_and_no_near_miss_or_clean_document_is(planting):
    index, docs, labels, _ = planting
    spans = find_matches(docs, index, MatchConfig())
    found = {(int(d), int(t)) for d, t in zip(spans.doc, spans.item)}
    for d, (kind, language, item) in enumerate(labels):
        flagged = {t for doc, t in found if doc == d}
        if kind in FOUND:
            assert item in flagged, (kind, language, item)
        else:
            assert flagged == set(), (kind, language, flagged)


def test_exact_and_fuzzy_kinds_and_scores(planting):
    index, docs, labels, _ = planting
    spans = find_matches(docs, index, MatchConfig())
    by_kind: dict[str, list[tuple[bool, float]]] = {}
    for d, item, exact, score in zip(spans.doc, spans.item, spans.exact, spans.score):
        if item == labels[d][2]:  # (another item may share an n-gram with the one planted: it is found too)
            by_kind.setdefault(labels[d][0], []).append((bool(exact), float(score)))
    assert all(exact and score == 1.0 for exact, score in by_kind["verbatim"] + by_kind["rewrapped"])
    assert all(exact for exact, _ in by_kind["part_60"])
    assert all(0.8 <= score < 1 for _, score in by_kind["edit_1_in_8"])
    exact_only = find_matches(docs, index, MatchConfig(fuzzy=False))
    assert not any(labels[d][0] == "edit_1_in_8" and not e for d, e in zip(exact_only.doc, exact_only.exact))


def _ngrams(text: str, n: int) -> set[tuple[int, ...]]:
    units = units_of([text]).hashes.tolist()
    return {tuple(units[i:i + n]) for i in range(len(units) - n + 1)}


def test_the_matched_text_is_cut_with_its_window_and_the_rest_kept(planting):
    index, docs, labels, texts = planting
    batch = pa.record_batch({"id": [str(i) for i in range(len(docs))], "text": docs})
    out = decontaminate_batch(batch, index, DecontamConfig())
    result = out.to_pylist()
    for d, ((kind, _, item), row) in enumerate(zip(labels, result)):
        if kind not in FOUND:
            assert row["text"] == docs[d] and row[SPANS] == [] and row[STATUS] == "kept"
            continue
        assert row[STATUS] == "kept", (kind, row[REASON])  # a long document is never dropped for one match
        n = int(index.item_ngram[item])
        # no n-gram of the item is left in the document ...
        units = index.item_units(item).tolist()
        assert not _ngrams(row["text"], n) & {tuple(units[i:i + n]) for i in range(len(units) - n + 1)}
        assert texts[d] not in row["text"] and len(docs[d]) - len(row["text"]) <= len(texts[d]) + 2 * 200 + 80
        # ... and what lies beyond the cut and its window is still there, paragraph breaks and all
        start = min(s["start"] for s in row[SPANS])
        before = docs[d][:max(0, start - 260)]
        assert row["text"].startswith(before.rstrip())
        assert row[CHARS_REMOVED] >= len(texts[d]) * (0.55 if kind == "part_60" else 0.85)


def test_a_document_left_too_short_or_with_too_many_matches_is_dropped_with_its_reason():
    items = english_items(12)
    index = build_index([("faq", str(i), t) for i, t in enumerate(items)], IndexConfig())
    short = "A short note.\n\n" + items[0]
    listing = "\n\n".join(items[:11]) + "\n\n" + hosts(False, 1)[0]
    batch = pa.record_batch({"id": ["short", "listing"], "text": [short, listing]})
    result = decontaminate_batch(batch, index, DecontamConfig()).to_pylist()
    assert [(r[STATUS], r[REASON]) for r in result] == [("dropped", "too_short_after_removal"),
                                                        ("dropped", "too_many_matches")]
    assert len(result[1][SPANS]) == 11 and result[1]["text"] == listing  # dropped whole, as it was
    # a document of 40 matches shows the first 11 (each span carries its item's id: 200 of a 9 MB id were 1.8 GB)
    many = pa.record_batch({"id": ["many"], "text": ["\n\n".join(items[:10] * 4)]})
    (row,) = decontaminate_batch(many, index, DecontamConfig()).to_pylist()
    assert row[REASON] == "too_many_matches" and len(row[SPANS]) == 11


def test_copies_of_one_item_are_one_span_against_the_limit_not_one_each():
    # a benchmark listing an item 11 times (or one file given under two names) matched a document quoting it
    # once 11 times, and the document was dropped as too_many_matches
    items = english_items(2)
    index = build_index([("faq", f"q{i}", items[0]) for i in range(11)] + [("other", "x", items[0]),
                                                                           ("faq", "last", items[1])], IndexConfig())
    doc = hosts(False, 1)[0] + "\n\n" + items[0] + "\n\n" + hosts(False, 2)[1] + "\n\n" + items[1]
    (row,) = decontaminate_batch(pa.record_batch({"id": ["d"], "text": [doc]}), index, DecontamConfig()).to_pylist()
    assert (row[STATUS], row[REASON]) == ("kept", None), row[REASON]
    assert {s["item"] for s in row[SPANS]} == {*(f"q{i}" for i in range(11)), "x", "last"}  # every copy audited
    assert len({(s["start"], s["end"]) for s in row[SPANS]}) == 2 and row["text"].startswith(hosts(False, 1)[0][:1000])
    assert row[CHARS_REMOVED] >= len(items[0]) + len(items[1]) and len(row["text"]) < len(doc)


def test_a_short_item_is_matched_whole_and_exactly_and_a_tiny_one_not_at_all():
    index = build_index([("b", "tiny", "Paris is"), ("b", "short", "Which planet is known as the red planet")],
                        IndexConfig())
    assert index.too_short == {"b": 1} and index.item_ids == ["short"] and index.item_short.tolist() == [True]
    docs = ["Q: which planet is known as the RED planet? A: Mars.", "which planet is known as the big planet",
            "Paris is lovely"]
    spans = find_matches(docs, index, MatchConfig())
    assert spans.doc.tolist() == [0]
    assert docs[0][spans.begin[0]:spans.end[0]] == "which planet is known as the RED planet"


def test_an_item_sharing_any_13_gram_is_found_however_many_items_share_its_seeds():
    rng = np.random.default_rng(3)
    vocabulary = [w for w in " ".join(english_items()).split() if w.isalpha()][:400]
    common = "of the Debian project and the"  # a phrase every item holds: no frequency cut-off may hide them
    items = [" ".join([*rng.choice(vocabulary, 20), common, *rng.choice(vocabulary, 20)]) for _ in range(300)]
    index = build_index([("b", str(i), t) for i, t in enumerate(items)], IndexConfig())
    docs = []
    for item in items[:100]:
        words = item.split()
        start = int(rng.integers(0, len(words) - 13))
        docs.append("Some unrelated words here and there. " + " ".join(words[start:start + 13]) + " and more after.")
    spans = find_matches(docs, index, MatchConfig(fuzzy=False))
    assert all(i in spans.item[spans.doc == i] for i in range(100))


def test_a_match_the_cut_itself_forms_drops_the_document():
    """Item Y sits inside item Z: cut with no window, Z's two halves meet and make Z's n-grams; the document
    is dropped rather than kept with them."""
    from prep.dedup.shingles import units

    items = english_items()
    z = next(t for t in items if 20 <= len(units(t)) <= 24 and len(t.split()) == len(units(t)))  # halves under 13
    y = next(t for t in items if len(units(t)) >= 40)  # long: Z around it aligns badly
    index = build_index([("b", "y", y), ("b", "z", z)], IndexConfig())
    words = z.split()
    half = len(words) // 2
    host = hosts(False, 1)[0]
    doc = host[:1000] + "\n\n" + " ".join(words[:half]) + " " + y + " " + " ".join(words[half:]) + "\n\n" + host[1000:]
    assert {index.item_ids[t] for t in find_matches([doc], index, MatchConfig()).item} == {"y"}
    batch = pa.record_batch({"id": ["d"], "text": [doc]})
    row = decontaminate_batch(batch, index, DecontamConfig(cut=CutConfig(window=0))).to_pylist()[0]
    assert (row[STATUS], row[REASON]) == ("dropped", "matches_left_after_removal") and row["text"] == doc


def test_a_document_past_its_matching_budget_is_dropped_with_its_reason_in_bounded_memory():
    # 2,000 items sharing their first words against a document repeating them (once 12 s and 1.4 GB), and one
    # item of a word repeated 100,000 times against a document of it (once 42 s and 5.9 GB; 10 KB was killed)
    import resource

    shared = build_index([("mmlu", str(i), f"Which of the following is true about topic {i} of field {7 * i}?")
                          for i in range(2000)], IndexConfig())
    repeated = build_index([("x", "0", "a " * 100_000)], IndexConfig())
    cfg = DecontamConfig()
    for index, text in ((shared, "Which of the following is true about " * 4000), (repeated, "a " * 5000)):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = decontaminate_batch(pa.record_batch({"id": ["d", "clean"], "text": [text, "Nothing to see."]}),
                                  index, cfg).to_pylist()
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        assert [(r[STATUS], r[REASON]) for r in out] == [("dropped", "over_match_budget"), ("kept", None)]
        assert grown_mb < 300, grown_mb


def test_past_its_alignment_budget_a_document_keeps_its_exact_matches(planting):
    index, docs, labels, _ = planting
    d = next(d for d, (kind, language, _) in enumerate(labels) if kind == "verbatim" and language == "en")
    e = next(d for d, (kind, language, _) in enumerate(labels) if kind == "edit_1_in_8" and language == "en")
    tight = DecontamConfig(match=MatchConfig(max_alignment_cells=1))
    out = decontaminate_batch(pa.record_batch({"id": ["v", "e"], "text": [docs[d], docs[e]]}), index, tight).to_pylist()
    assert [r[REASON] for r in out] == ["fuzzy_over_budget", "fuzzy_over_budget"]
    assert out[0][STATUS] == "kept" and out[0][SPANS] and all(s["kind"] == "exact" for s in out[0][SPANS])
    assert out[1][SPANS] == [] and out[1]["text"] == docs[e]  # its edited item was only ever a fuzzy match
