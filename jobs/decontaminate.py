"""The decontamination job: benchmark items cut out of the documents, span by span, with an audit.

    spark-submit jobs/decontaminate.py --input IN --benchmark NAME=PATH [--benchmark NAME=PATH ...] --output OUT
    python -m jobs.decontaminate --input IN --benchmark NAME=PATH --output OUT [--config FILE] [--print-config]

Writes OUT/docs/, OUT/matches/, OUT/dropped/, OUT/quarantine/, OUT/report.md and OUT/stats.json
(spark_stages/decontaminate.py).
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import decontaminate
    from spark_stages.runner import run_stage

    sys.exit(run_stage(decontaminate.STAGE))
