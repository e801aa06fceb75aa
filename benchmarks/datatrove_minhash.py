"""datatrove's MinHash deduplication, its four stages, on a folder of JSON Lines; prints JSON timings.

Run by bench_dedup.py with the Python of a throwaway venv that has datatrove (not a tokenmill
dependency). Configured as datatrove's own example: 5-grams, 14 buckets x 8 hashes, two workers.
"""

import json
import sys
import time

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup import MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
from datatrove.pipeline.dedup.minhash import MinhashConfig
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


def main(input_folder: str, work: str, workers: int) -> None:
    config = MinhashConfig()
    reader = lambda: JsonlReader(input_folder, glob_pattern="*.jsonl")  # noqa: E731
    stages = {
        "signatures": LocalPipelineExecutor([reader(), MinhashDedupSignature(f"{work}/sigs", config=config)],
                                            tasks=workers, workers=workers, logging_dir=f"{work}/logs/1"),
        "buckets": LocalPipelineExecutor([MinhashDedupBuckets(f"{work}/sigs", f"{work}/buckets", config=config)],
                                         tasks=config.num_buckets, workers=workers, logging_dir=f"{work}/logs/2"),
        "cluster": LocalPipelineExecutor([MinhashDedupCluster(f"{work}/buckets", f"{work}/remove", config=config)],
                                         tasks=1, logging_dir=f"{work}/logs/3"),
        "filter": LocalPipelineExecutor([reader(), MinhashDedupFilter(f"{work}/remove"), JsonlWriter(f"{work}/out")],
                                        tasks=workers, workers=workers, logging_dir=f"{work}/logs/4"),
    }
    seconds = {}
    for name, executor in stages.items():
        started = time.perf_counter()
        executor.run()
        seconds[name] = time.perf_counter() - started
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
