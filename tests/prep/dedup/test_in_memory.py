"""The dedup decisions in memory, without Spark (their equality with the Spark stages, output for output,
is tested in tests/spark_stages/test_dedup.py)."""

import numpy as np
import pyarrow as pa
import xxhash

from prep.dedup.batches import DedupConfig, features_batch
from prep.dedup.in_memory import TEXT_HASH, SourceCounts, decide
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file

COLUMNS = ["row", "id_hash", "text_len", "exact_hash", "signature"]


def features(texts: list[str]) -> pa.Table:
    batch = pa.RecordBatch.from_pydict({"row": list(range(len(texts))), "id": [f"d{i}" for i in range(len(texts))],
                                        "text": pa.array(texts, pa.string())})
    table = pa.Table.from_batches([features_batch(batch, DedupConfig())]).select(COLUMNS)
    # the raw text's hash as the job adds it (Spark's xxhash64 there; any stable 64-bit hash here)
    hashes = np.array([xxhash.xxh64_intdigest(t.encode()) for t in texts], np.uint64).view(np.int64)
    return table.append_column(TEXT_HASH, pa.array(hashes, pa.int64()))


def test_exact_and_near_copies_leave_the_longest_and_clusters_count_them(sample_dir):
    docs = [r.text for f in expand_inputs(str(sample_dir / "debian-handbook.en.jsonl.zst")) for r in read_file(f)
            if isinstance(r, Document) and 2000 < len(r.text) < 6000][:20]
    near = docs[1] + " Posted by admin on Monday."  # longer: it survives
    texts = docs + [docs[0].upper(), near, docs[0]]
    decisions = decide(features(texts), np.zeros(len(texts), np.int32), False, DedupConfig())
    kept = [t for t, k in zip(texts, decisions.kept) if k]
    assert sum(t.lower() == docs[0].lower() for t in kept) == 1  # one of its three exact copies (equal lengths)
    assert near in kept and docs[1] not in kept and set(docs[2:]) <= set(kept) and len(kept) == 20
    assert decisions.counts(np.zeros(len(texts), np.int32), 0) == SourceCounts(input=23, kept=20, exact=2, near=1,
                                                                              earlier=0)
    assert decisions.cluster_sizes() == [(2, 1), (3, 1)]


def test_per_source_compares_each_source_alone_and_across_drops_the_later_copy(sample_dir):
    docs = [r.text for f in expand_inputs(str(sample_dir / "debian-handbook.en.jsonl.zst")) for r in read_file(f)
            if isinstance(r, Document) and 2000 < len(r.text) < 6000][:5]
    texts, sources = docs + docs[:2], np.array([0] * 5 + [1] * 2, np.int32)
    across = decide(features(texts), sources, False, DedupConfig())
    apart = decide(features(texts), sources, True, DedupConfig())
    assert across.kept.tolist() == [True] * 5 + [False] * 2 and apart.kept.all()
    assert across.counts(sources, 1).earlier == 2 and apart.counts(sources, 1).earlier == 0


def test_no_documents():
    decisions = decide(features([]), np.zeros(0, np.int32), False, DedupConfig())
    assert len(decisions.kept) == 0 and decisions.cluster_sizes() == [] and decisions.graph.candidate_pairs == 0


def test_texts_that_normalize_to_nothing_are_copies_only_of_the_same_text():
    """Found by the review of 2026-12-07: punctuation, white space or symbols alone normalize to nothing, and
    all such documents were one exact duplicate (and one near one: their signatures were one), four of five
    removed."""
    texts = ["!!!", "???", "   \n\t ", "— … —", "...", "???", "✓ ✓ ✓"]
    decisions = decide(features(texts), np.zeros(len(texts), np.int32), False, DedupConfig())
    kept = [t for t, k in zip(texts, decisions.kept) if k]
    assert sorted(kept) == sorted(set(texts))  # the second "???" alone goes
    assert decisions.counts(np.zeros(len(texts), np.int32), 0).exact == 1
