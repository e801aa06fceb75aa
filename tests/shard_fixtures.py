"""Small shard folders written the way the tokenize job writes them, for validator and loader tests."""

import json

import numpy as np

from prep.packing import PackConfig, materialize, pack
from prep.shard_writer import ShardConfig, ShardWriter
from schemas.shards import new_index, shard_name

PAD, SEQ = 2, 512


def write_shards(folder, bad_row=None, parts=2, batch_bytes=16 << 10):
    """`parts` shards of packed rows (record batches of about `batch_bytes`) (written as the job does) and their index; the documents' tokens
    are 0 (bos), random ids from 19, 1 (eos)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    docs = [np.concatenate([[0], rng.integers(19, 1000, n), [1]]).astype(np.uint32) for n in rng.integers(5, 900, 60)]
    tokens, cu = materialize(pack([len(d) for d in docs], PackConfig(SEQ)), docs, PAD)
    if bad_row is not None:
        tokens[0], cu[0] = bad_row
    entries = []
    bounds = np.linspace(0, len(tokens), parts + 1).astype(int)
    for part, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        writer = ShardWriter(folder, f"p{part}", ShardConfig(batch_bytes=batch_bytes))
        for t, c in zip(tokens[lo:hi], cu[lo:hi]):
            writer.add(t, c)
        [entry] = writer.close()
        (folder / entry["file"]).rename(folder / shard_name(part))
        entries.append({**entry, "file": shard_name(part)})
    index = new_index(entries, tokenizer_sha256="0" * 64, vocab_size=1000, seq_len=SEQ, pad_id=PAD, bos_id=0, eos_id=1,
                      compression_level=3, documents=len(docs))
    (folder / "index.json").write_text(json.dumps(index))
    return index
