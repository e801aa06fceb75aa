"""The extract job: WARC files in, the main text of each HTML page out, site templates removed.

    spark-submit jobs/extract.py --input 'crawl/*.warc.gz' --output OUT [--config FILE]
    python -m jobs.extract --input 'crawl/*.warc.gz' --output OUT [--config FILE] [--print-config]

Writes OUT/docs/, OUT/quarantine/, OUT/report.md and OUT/stats.json (spark_stages/extract.py).
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import extract
    from spark_stages.runner import run_stage

    sys.exit(run_stage(extract.STAGE))
