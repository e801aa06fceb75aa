"""One large shard from a small shards folder: its rows written `--times` times into one shard file
(real token rows, the shards job's writer), with an index. For loader benchmarks at shard sizes a
small sample cannot reach.

    python -m benchmarks.repeat_shard --shards out/sample/shards --times 14 --output /tmp/big2048
"""

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from prep.shard_writer import ShardConfig, ShardWriter
from schemas.index import INDEX_FILE, new_index
from schemas.shards import shard_name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", required=True)
    parser.add_argument("--times", type=int, required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    source, out = Path(args.shards), Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    index = json.loads((source / INDEX_FILE).read_text())
    writer = ShardWriter(out, "repeated", ShardConfig(zstd_level=index["compression_level"], shard_mb=1 << 20))
    for _ in range(args.times):
        for entry in index["shards"]:
            table = pa.ipc.open_file(pa.memory_map(str(source / entry["file"]))).read_all()
            for tokens, cu in zip(table.column("tokens").to_pylist(), table.column("cu_seqlens").to_pylist()):
                writer.add(np.array(tokens, np.uint32), np.array(cu, np.int32))
    [entry] = writer.close()
    (out / entry.file).rename(out / shard_name(0))
    fields = {k: index[k] for k in ("tokenizer_sha256", "vocab_size", "seq_len", "pad_id", "bos_id", "eos_id")}
    new_index([dataclasses.replace(entry, file=shard_name(0))], **fields, compression_level=index["compression_level"],
              documents=index["totals"]["documents"] * args.times).write(out)
    print(f"{out / shard_name(0)}: {entry.rows} rows, {entry.tokens / 1e6:.1f} M tokens, {entry.bytes / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
