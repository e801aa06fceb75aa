"""The Spark side of tokenmill: the session, the runner behind every job's command line, the check
of the executors, job outputs, and the plan of each stage (clean, dedup, tokenizer, shards, pipeline).
Shipped to the executors with every job; entry points live in jobs/."""
