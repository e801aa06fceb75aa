"""Compiles tokenmill's numba kernels into their on-disk cache (prep/compiled.py) on a little of the
sample corpus, by the calls the jobs make (text as Python strings and as Arrow string columns of both
offset widths): `make install` runs it, so that the first job on a machine does not spend ~25 s
compiling what every later job loads (the first `make shards` took 69 s, the second 46 s).

    python -m prep.warm
"""

import time
from pathlib import Path

import pyarrow as pa

from prep.clean import CleanConfig, clean_texts
from prep.dedup.batches import DedupConfig, features_batch
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.bpe import train_bpe
from prep.tokenizer.encoder import Encoder
from prep.tokenizer.train import TokenizerConfig, train_local

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _as_received(column: pa.Array) -> pa.Array:
    """The column as a task receives it, through Arrow IPC: its buffers read-only, which numba types apart."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, pa.schema([("text", column.type)])) as writer:
        writer.write_batch(pa.record_batch([column], names=["text"]))
    return pa.ipc.open_stream(sink.getvalue()).read_next_batch().column(0)


def warm(documents: int = 60) -> float:
    """Runs each compiled kernel once; returns the seconds it took."""
    started = time.perf_counter()
    texts = [r.text for f in expand_inputs(str(SAMPLE))[:4] for r in read_file(f) if isinstance(r, Document)]
    texts = texts[:documents]
    clean_texts(texts, CleanConfig())  # the language model and the repetition rules
    for kind in (pa.string(), pa.large_string()):
        column = _as_received(pa.array(texts, kind))
        features_batch(pa.record_batch({"row": pa.array(range(len(texts)), pa.int64()),
                                        "id": pa.array([str(i) for i in range(len(texts))]), "text": column}),
                       DedupConfig())
    hybrid, _ = train_local(texts, TokenizerConfig(vocab_size=1024))  # the Unigram stage's lattice
    for tokenizer in (hybrid, train_bpe(texts, 512)):
        encoder = Encoder(tokenizer.to_str())
        encoder.encode_batch(texts)
        for kind in (pa.string(), pa.large_string()):
            encoder.encode_batch(_as_received(pa.array(texts, kind)))
    return time.perf_counter() - started


if __name__ == "__main__":
    print(f"compiled kernels cached in {warm():.1f} s")
