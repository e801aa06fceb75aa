"""The whole pipeline in one Spark session: clean → dedup → train tokenizer (unless given) → shards.

    spark-submit jobs/pipeline.py --input IN --output OUT [--tokenizer FILE] [--vocab-size 131072]
        [--seq-len 4096] [--clean-config FILE] [--config FILE] [--conf key=value ...]
    python -m jobs.pipeline ... [--print-config]

Writes OUT/clean/, OUT/dedup/, OUT/tokenizer/ and OUT/shards/ (spark_stages/pipeline.py). One YAML
file (--config) sets every stage, in sections clean:, dedup:, tokenizer:, shards:.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import pipeline
    from spark_stages.runner import run_stage

    sys.exit(run_stage(pipeline.STAGE))
