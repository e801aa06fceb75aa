"""Entry points only: `python -m jobs.NAME` and `spark-submit jobs/NAME.py` for the Spark jobs,
`torchrun jobs/train.py` for training."""
