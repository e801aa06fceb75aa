"""The cleaning job: raw text in, cleaned documents, rejections and quarantine out.

    spark-submit jobs/clean.py --input IN --output OUT [--config FILE] [--partitions N]
    python -m jobs.clean --input IN --output OUT [--config FILE] [--print-config] [--conf key=value ...]

Writes OUT/docs/, OUT/rejected/, OUT/quarantine/, OUT/report.md and OUT/stats.json (spark_stages/clean.py).
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import clean
    from spark_stages.runner import run_stage

    sys.exit(run_stage(clean.STAGE))
