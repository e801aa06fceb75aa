"""Shards benchmark (issues 5, 14): tokens/s per core of the whole shards job against the bare encoder it
uses (the compiled one for tokenmill's tokenizers) on the same text, with the shards' bytes/token on
disk and padding waste.

    make shards && python -m benchmarks.bench_tokenize [--input out/sample/dedup/docs]
        [--tokenizer out/sample/tokenizer/tokenizer.json] [--seq-len 4096] [--cores 2] [--copies N]

`--copies N` measures on N copies of the input's documents under other ids (`ID#copyI`), one Parquet
file each, written to .bench/tokenize-copies-N first, anew each run (the README's 463 MB: the sample's deduplicated
documents, --copies 96).

The job runs twice in one Spark session (local[cores]): the first run pays the Python workers'
start, the second is warm; the JVM start is not counted in either. The bare encoder runs in one
process on one core, over the same texts, the tokens and nothing else (one core: it is single-threaded,
and the job runs one task per core); then in `--cores` processes at once, each on its share of the
batches, which is the most the job could do on this machine's cores (it is not always `--cores` times
one process's rate).
"""

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
BATCH = 10_000  # documents per call, as Spark hands Arrow batches to the job (arrow.maxRecordsPerBatch)


def bare_encode(texts: pa.ChunkedArray, tokenizer_file: str) -> tuple[int, float]:
    """(tokens with bos/eos, seconds) of the job's own encoder, warm, on one core, reading Arrow string
    arrays as the job does."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # for a tokenizer the compiled encoder does not take
    from prep.tokenizer.encode import batch_encoder

    encode = batch_encoder(Path(tokenizer_file).read_text(encoding="utf-8"))
    batches = [texts.slice(i, BATCH).combine_chunks() for i in range(0, len(texts), BATCH)]
    encode(batches[0][:8])  # compiled or loaded before the clock starts
    started, tokens = time.perf_counter(), 0
    for batch in batches:
        ids, _ = encode(batch)
        tokens += len(ids) + 2 * len(batch)
    return tokens, time.perf_counter() - started


def _encode_share(args: tuple[str, str, int, int]) -> float:
    """In a process of its own: seconds for bare_encode of every `cores`-th text from `k` on."""
    folder, tokenizer_file, k, cores = args
    texts = pq.read_table(folder, columns=["text"]).column("text")
    share = pa.chunked_array([texts.slice(i, BATCH).combine_chunks() for i in range(0, len(texts), BATCH)][k::cores])
    return bare_encode(share, tokenizer_file)[1]


def bare_encode_parallel(folder: str, tokenizer_file: str, cores: int) -> float:
    """Seconds for `cores` bare encoders at once, each on every `cores`-th batch: the most a job on that
    many cores could do on this machine (two processes do not run at twice one's speed everywhere)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(cores) as pool:
        return max(pool.map(_encode_share, [(folder, tokenizer_file, k, cores) for k in range(cores)]))


def copies_of(folder: str, copies: int) -> str:
    """`copies` Parquet files of the input's documents, ids suffixed `#copyI`; the folder's path. Written
    anew each time (2.5 s for the 463 MB): copies of another input or of an older one are never measured."""
    target = REPO / ".bench" / f"tokenize-copies-{copies}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    table = pq.read_table(folder)  # every column, as the dedup job wrote them
    at = table.schema.get_field_index("id")
    for i in range(copies):
        ids = pc.binary_join_element_wise(table.column("id"), pa.scalar(f"#copy{i}"), "")
        pq.write_table(table.set_column(at, "id", ids), target / f"part-{i:05d}.parquet")
    return str(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", default="out/sample/dedup/docs")
    parser.add_argument("--tokenizer", default="out/sample/tokenizer/tokenizer.json")
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--copies", type=int, help="measure on this many copies of the input (other ids)")
    args = parser.parse_args()
    if args.copies:
        args.input = copies_of(args.input, args.copies)

    from prep.ingest.inputs import single_source
    from prep.packing import PackConfig
    from spark_stages import shards
    from spark_stages.session import get_spark

    texts = pq.read_table(args.input, columns=["text"]).column("text")
    megabytes = pc.sum(pc.binary_length(texts)).as_py() / 1e6
    tokens, bare_seconds = bare_encode(texts, args.tokenizer)
    parallel_seconds = bare_encode_parallel(args.input, args.tokenizer, args.cores)
    spark = get_spark("tokenmill-bench-tokenize", [f"spark.master=local[{args.cores}]"])
    cfg = shards.Config(tokenizer=args.tokenizer, pack=PackConfig(args.seq_len))
    runs = []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            index = shards.run(spark, single_source(args.input), cfg, out)
            runs.append(time.perf_counter() - started)
    spark.stop()
    totals = index["totals"]
    assert totals["real_tokens"] == tokens, "the job and the bare encoder disagree on the token count"
    print(f"{len(texts)} documents, {megabytes:.1f} MB of text, {tokens} tokens (with bos/eos), {args.cores} cores\n")
    print("| | seconds | tokens/s per core | vs the bare encoder |\n|---|---|---|---|")
    bare = tokens / bare_seconds
    print(f"| the job's encoder alone, 1 core | {bare_seconds:.1f} | {bare:,.0f} | 1.00x |")
    rate = tokens / parallel_seconds / args.cores
    print(f"| the encoder alone in {args.cores} processes at once, each on 1/{args.cores} of the batches | "
          f"{parallel_seconds:.1f} | {rate:,.0f} | {rate / bare:.2f}x |")
    for name, seconds in zip(("shards job, first run", "shards job, warm run"), runs):
        rate = tokens / seconds / args.cores
        print(f"| {name} | {seconds:.1f} | {rate:,.0f} | {rate / bare:.2f}x (overhead {bare / rate - 1:.0%}) |")
    print(f"\nshards: {totals['rows']} rows, padding waste {totals['padding_waste']:.2%}, "
          f"{totals['bytes_per_token']:.3f} bytes/token on disk (zstd level {index['compression_level']}), "
          f"{totals['bytes'] / 1e6:.1f} MB for {megabytes:.1f} MB of text")


if __name__ == "__main__":
    main()
