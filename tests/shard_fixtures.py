"""Small shard folders written the way the tokenize job writes them, for validator and loader tests."""

import dataclasses
import json
from pathlib import Path

import numpy as np

from prep.packing import PackConfig, materialize, pack
from prep.shard_writer import ShardConfig, ShardWriter
from schemas.index import new_index
from schemas.shards import shard_name

PAD, SEQ = 2, 512
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def write_shards(folder, bad_row=None, parts=2, batch_bytes=16 << 10, seed=0, documents=60):
    """`parts` shards of packed rows and their index, written as the job does (record batches of about
    `batch_bytes`); the documents' tokens are 0 (bos), random ids from 19, 1 (eos)."""
    rng = np.random.default_rng(seed)
    docs = [np.concatenate([[0], rng.integers(19, 1000, n), [1]]).astype(np.uint32)
            for n in rng.integers(5, 900, documents)]
    tokens, cu = materialize(pack([len(d) for d in docs], PackConfig(SEQ)), docs, PAD)
    if bad_row is not None:
        tokens[0], cu[0] = bad_row
    return write_rows(folder, tokens, cu, parts, batch_bytes, tokenizer_sha256="0" * 64, vocab_size=1000,
                      seq_len=SEQ, pad_id=PAD, bos_id=0, eos_id=1, documents=len(docs))


def sample_texts(files) -> list[str]:
    import io

    import zstandard

    texts = []
    for name in files:
        raw = zstandard.ZstdDecompressor().stream_reader(open(SAMPLE / f"{name}.jsonl.zst", "rb"))
        texts += [json.loads(line)["text"] for line in io.TextIOWrapper(raw, encoding="utf-8") if line.strip()]
    return texts


def write_text_shards(folder, seq_len=512, vocab_size=1024, files=("debian-faq.en", "debian-faq.zh"), parts=2,
                      tokenizer_file=None, edit_rows=None):
    """Shards of real text: documents of the embedded sample, tokenized by a small BPE trained on them
    (or by `tokenizer_file`; no Spark: the prep functions the shards job runs), packed into rows of seq_len.
    `edit_rows(tokens, cu, bounds)` may change rows before they are written (bounds: each shard's first row)."""
    from prep.tokenizer.bpe import train_bpe
    from prep.tokenizer.encode import TokenizerFile, encode_documents

    folder.mkdir(parents=True, exist_ok=True)
    texts = sample_texts(files)
    if tokenizer_file is None:
        train_bpe(texts, vocab_size).save(str(folder / "tokenizer.json"))
        tokenizer_file = TokenizerFile.read(str(folder / "tokenizer.json"))
    docs = encode_documents(tokenizer_file, texts)
    tokens, cu = materialize(pack([len(d) for d in docs], PackConfig(seq_len)), docs, tokenizer_file.pad_id)
    if edit_rows is not None:
        edit_rows(tokens, cu, np.linspace(0, len(tokens), parts + 1).astype(int))
    return write_rows(folder, tokens, cu, parts, 64 << 10, tokenizer_sha256=tokenizer_file.sha256,
                      vocab_size=tokenizer_file.vocab_size, seq_len=seq_len, pad_id=tokenizer_file.pad_id,
                      bos_id=tokenizer_file.bos_id, eos_id=tokenizer_file.eos_id, documents=len(docs))


def write_text_mixture(folder, weights: dict[str, float], files: dict[str, tuple[str, ...]], seq_len=512,
                       vocab_size=1024):
    """A mixture as the pipeline writes it: one BPE trained on every source's text, each source's shards
    in folder/NAME/, and folder/mixture.json with `weights`; returns its path."""
    from prep.tokenizer.bpe import train_bpe
    from prep.tokenizer.encode import TokenizerFile
    from schemas.mixture import MIXTURE_FILE, new_mixture

    folder.mkdir(parents=True, exist_ok=True)
    train_bpe(sample_texts([f for group in files.values() for f in group]), vocab_size).save(
        str(folder / "tokenizer.json"))
    tokenizer_file = TokenizerFile.read(str(folder / "tokenizer.json"))
    indexes = {name: write_text_shards(folder / name, seq_len, files=group, parts=1, tokenizer_file=tokenizer_file)
               for name, group in files.items()}
    mixture = new_mixture({name: (name, weights[name], index["totals"]["rows"], index["totals"]["tokens"])
                           for name, index in indexes.items()})
    (folder / MIXTURE_FILE).write_text(json.dumps(mixture.to_json()))
    return folder / MIXTURE_FILE


def write_rows(folder, tokens, cu, parts, batch_bytes, **index_fields):
    """The rows split into `parts` shard files (shard-NNNNN.arrow) and index.json; returns the index."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    bounds = np.linspace(0, len(tokens), parts + 1).astype(int)
    for part, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        writer = ShardWriter(folder, f"p{part}", ShardConfig(batch_bytes=batch_bytes))
        for t, c in zip(tokens[lo:hi], cu[lo:hi]):
            writer.add(t, c)
        [entry] = writer.close()
        (folder / entry.file).rename(folder / shard_name(part))
        entries.append(dataclasses.replace(entry, file=shard_name(part)))
    index = new_index(entries, compression_level=3, **index_fields).to_json()
    (folder / "index.json").write_text(json.dumps(index))
    return index
