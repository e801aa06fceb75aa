"""The report job: OUT/report.html of an output folder, written again; or a comparison of two runs.

    python -m jobs.report OUT [--compare OTHER] [--output FILE] [--read-outside true] [--config FILE]
                              [--print-config]
    spark-submit jobs/report.py OUT   (the same: the report reads the outputs on the driver, without Spark)

Every job and the pipeline write OUT/report.html themselves (spark_stages/runner.py); this rewrites it, with
other bounds (report/config.py), or compares two runs (OUT/compare.html). The files outside OUT that its
run.json and settings.yaml name (inputs, benchmark files) are read only with --read-outside true: for a
folder you trust.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from report.cli import main

    sys.exit(main())
