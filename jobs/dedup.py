"""The dedup job: exact duplicates, then MinHash-LSH near duplicates, one survivor per cluster.

    spark-submit jobs/dedup.py --input IN --output OUT [--threshold 0.8] [--num-perm 128] [--ngram 5] [--no-verify]
    python -m jobs.dedup --input IN --output OUT [...] [--config FILE] [--print-config] [--conf key=value ...]

Writes OUT/docs/, OUT/clusters/, OUT/report.md and OUT/stats.json (spark_stages/dedup.py).
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import dedup
    from spark_stages.runner import run_stage

    sys.exit(run_stage(dedup.STAGE))
