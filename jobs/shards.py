"""The shards job (was jobs/tokenize.py): encode documents, pack them into rows, write zstd Arrow shards.

    spark-submit jobs/shards.py --input IN --tokenizer FILE --output SHARDS [--seq-len 4096]
        [--zstd-level 3] [--shard-mb 128] [--conf key=value ...]
    python -m jobs.shards ... [--config FILE] [--print-config]

Writes SHARDS/shard-NNNNN.arrow and SHARDS/index.json (spark_stages/shards.py); check them with
`python -m schemas.validate SHARDS`.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import shards
    from spark_stages.runner import run_stage

    sys.exit(run_stage(shards.STAGE))
