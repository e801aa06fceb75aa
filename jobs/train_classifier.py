"""The train_classifier job: a classifier (fastText's supervised model) from the user's labelled documents.

    spark-submit jobs/train_classifier.py --label good=PATH --label junk=PATH --output OUT [--train.dim 64] ...
    python -m jobs.train_classifier --positive PATH --negative-from CLEANED --output OUT [--negatives 20000]
    python -m jobs.train_classifier --input LABELLED --label-field label --output OUT

Writes OUT/model.bin, OUT/report.json and OUT/report.md (spark_stages/train_classifier.py); the clean job
scores with the model (clean.classifiers).
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import train_classifier
    from spark_stages.runner import run_stage

    sys.exit(run_stage(train_classifier.STAGE))
