"""The shards job's hand-over from encoding to packing, without Spark: what an encoding task writes and
how a packing group finds its documents in it."""

import os

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.bpe import train_bpe
from prep.tokenizer.encode import TokenizerFile, encode_documents
from spark_stages.shards import _mapped_batches, encoded_file, group_bounds, group_rows


@pytest.fixture(scope="module")
def docs_and_tokenizer(sample_dir, tmp_path_factory):
    docs = [r for f in expand_inputs(str(sample_dir / "debian-faq.en*")) for r in read_file(f)
            if isinstance(r, Document)]
    folder = tmp_path_factory.mktemp("tokenizer")
    train_bpe([d.text for d in docs], 1024).save(str(folder / "tokenizer.json"))
    return docs, TokenizerFile.read(str(folder / "tokenizer.json"))


def test_a_task_file_holds_each_input_batch_sorted_and_each_group_finds_its_documents_once(docs_and_tokenizer,
                                                                                            tmp_path):
    docs, tokenizer = docs_and_tokenizer
    table = pa.table({"id": [d.id for d in docs] + ["no-text"], "text": [d.text for d in docs] + [None]})
    batches = [table.slice(a, 40).to_batches()[0] for a in range(0, table.num_rows, 40)]
    row = encoded_file(iter(batches), tokenizer, tmp_path).to_pylist()[0]
    assert row["documents"] == len(docs) and row["text_bytes"] == sum(len(d.text.encode()) for d in docs)
    assert row["null_texts"] == 1  # counted for the quarantine, not encoded
    written = pa.ipc.open_file(pa.memory_map(str(tmp_path / row["file"]))).read_all().to_batches()
    assert [b.num_rows for b in written] == [b.num_rows for b in batches[:-1]] + [batches[-1].num_rows - 1]
    assert all((k[1:] >= k[:-1]).all() for k in (b.column("key").to_numpy() for b in written))  # sorted

    expected = dict(zip((d.id for d in docs), encode_documents(tokenizer, [d.text for d in docs])))
    # the group key: XXH64 of the text seeded with the id's hash (Spark's xxhash64, unsigned)
    unsigned = [xxhash.xxh64_intdigest(d.text.encode(), xxhash.xxh64_intdigest(d.id.encode(), 42) ^ 1 << 63)
                for d in docs]
    groups, seen = 5, {}
    for group in range(groups):
        found = group_rows(written, group, groups)
        for doc_id, tokens in zip(found.column("id").to_pylist(), found.column("tokens").to_pylist()):
            assert doc_id not in seen
            seen[doc_id] = group
            assert np.array_equal(np.frombuffer(tokens, np.uint32), expected[doc_id])
    for doc, key in zip(docs, unsigned):  # every document, in the group its key's range names
        low, high = group_bounds(seen[doc.id], groups)
        assert low <= key < high


def test_a_task_without_documents_writes_no_file(docs_and_tokenizer, tmp_path):
    _, tokenizer = docs_and_tokenizer
    empty = pa.record_batch({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())})
    assert encoded_file(iter([empty]), tokenizer, tmp_path).to_pylist() == [
        {"file": "", "documents": 0, "text_bytes": 0, "null_texts": 0}]
    assert list(tmp_path.iterdir()) == []


def test_a_packing_task_holds_no_descriptor_per_mapped_file(docs_and_tokenizer, tmp_path):
    # It maps every encoding task's file, thousands at scale: descriptors would run out, mappings do not.
    docs, tokenizer = docs_and_tokenizer
    table = pa.table({"id": [d.id for d in docs], "text": [d.text for d in docs]})
    name = encoded_file(iter(table.to_batches()), tokenizer, tmp_path).to_pylist()[0]["file"]
    before = len(os.listdir("/proc/self/fd"))
    mapped = [_mapped_batches(tmp_path / name)[1] for _ in range(50)]
    assert len(os.listdir("/proc/self/fd")) == before
    assert all(sum(b.num_rows for b in batches) == len(docs) for batches in mapped)
    assert sorted(i for b in mapped[-1] for i in b.column("id").to_pylist()) == sorted(d.id for d in docs)  # readable
