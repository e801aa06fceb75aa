"""The tokenizer job: train the 128K hybrid BPE+Unigram tokenizer (or a plain baseline) on Spark.

    spark-submit jobs/train_tokenizer.py --input IN --output OUT [--vocab-size 131072]
        [--algorithm hybrid|bpe|unigram] [--sample-bytes N] [--held-out 0.05] [--conf key=value ...]
    python -m jobs.train_tokenizer ... [--config FILE] [--print-config]

Writes OUT/tokenizer.json, OUT/tokenizer_config.json, OUT/bpe_same_size.json and OUT/report.json
(spark_stages/tokenizer.py).
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for spark-submit jobs/X.py
    from spark_stages import tokenizer
    from spark_stages.runner import run_stage

    sys.exit(run_stage(tokenizer.STAGE))
