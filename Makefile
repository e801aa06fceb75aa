# `make shards` and `make test` are the two commands; both install what they need first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Exactly this torch: it is the CPU build on disk here. Any other version (or a range) pulls CUDA.
TORCH := torch==2.13.0
SAMPLE := data/sample
OUT := out/sample
# 10 MB of sample text cannot fill 131072 pieces (the job's default, for real corpora)
SAMPLE_VOCAB := 32768

.PHONY: install lint test test-fast test-cluster browser shards train clean-out bench-clean eval-clean eval-profiles bench-extract bench-decontaminate gpu-check bench-classifier bench-paragraphs bench-dedup eval-dedup bench-tokenizer bench-superword-learning bench-tokenize bench-loader bench-mixture bench-minhash bench-encode bench-scale

install: $(STAMP)

# loaders/_collate.c is compiled by the editable install: a change to it installs again.
$(STAMP): pyproject.toml Makefile loaders/_collate.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q '$(TORCH)'
	$(PY) -m pip install -q -e '.[dev]'
	# what every job would otherwise pay for on a fresh machine, done once here: the compiled kernels'
	# cache and the driver JVM's class archive
	$(PY) -m prep.warm
	$(PY) -m spark_stages.class_archive
	touch $(STAMP)

lint: install
	$(VENV)/bin/ruff check .

# --durations: the slowest tests named in every run's log (CI's too), to keep the whole under 15 minutes.
# Two test processes, each a file at a time (a file's Spark session and fixtures are set up once): 18 minutes
# in one process, 15 to 17 in two on a 2-core machine (911 and 1,000 s, 2026-12-07).
test: lint
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=20 tests

# Everything but Spark, torchrun and torch.compile: under two minutes, for the edit-test loop.
test-fast: lint
	$(PY) -m pytest -q -m "not spark and not torchrun and not compile and not cluster" tests

# Where users run it: a real Spark standalone master and worker on 127.0.0.1 with executors in
# .cluster/executor-venv (the `executor` dependency group alone), the pipeline submitted from outside
# the repository, Python workers and an executor JVM killed mid-job; two torchrun "nodes", one killed;
# each job's file under spark-submit; a fresh machine's JVM class archive recorded and mapped.
test-cluster: install
	$(PY) -m pytest -q -m cluster tests

# Headless Chromium for the report's browser tests (tests/report/test_browser.py, skipped with the reason
# without it): Debian's package (as root: `sudo make browser` otherwise).
browser:
	command -v chromium || command -v chromium-browser || \
		(apt-get update && apt-get install -y --no-install-recommends chromium)

shards: install
	$(PY) -m jobs.pipeline --input $(SAMPLE) --output $(OUT) --vocab-size $(SAMPLE_VOCAB)
	$(PY) -m schemas.validate $(OUT)/shards

# The bundled training loop: two CPU processes (gloo), the tiny model, 200 steps on make shards' output
# (--resume: run again, it goes on from out/train's newest checkpoint; a new run takes another --run-dir).
train: install
	test -f $(OUT)/shards/index.json || $(MAKE) shards
	$(VENV)/bin/torchrun --standalone --nproc_per_node=2 jobs/train.py --shards $(OUT)/shards --run-dir out/train \
		--model tiny --steps 200 --global-batch-size 2 --warmup-steps 20 --lr 3e-3 --checkpoint-every 50 --resume

clean-out:
	rm -rf out

# Benchmarks print Markdown tables (see README). bench-clean installs datatrove in .bench/ the first time.
bench-clean: install
	$(PY) -m benchmarks.bench_clean

eval-clean: install
	$(PY) -m benchmarks.eval_clean_quality

# Main-text extraction against trafilatura, resiliparse and readability on trafilatura's evaluation pages, packed
# into a WARC (its peers installed into .venv the first time), the job end to end on 24 copies, and the accuracy on
# Zyte's article benchmark, Readability's test pages and 2025's web where they are there. TRAFILATURA_TESTS: the
# tests/ folder of a clone of https://github.com/adbar/trafilatura; ZYTE_BENCHMARK: a clone of
# https://github.com/scrapinghub/article-extraction-benchmark; READABILITY_PAGES: a clone of
# https://github.com/mozilla/readability; MODERN_PAGES: a clone of
# https://github.com/Murrough-Foley/web-content-extraction-benchmark
TRAFILATURA_TESTS ?= /tmp/trafilatura/tests
ZYTE_BENCHMARK ?= /tmp/article-extraction-benchmark
READABILITY_PAGES ?= /tmp/readability
MODERN_PAGES ?= /tmp/web-content-extraction-benchmark
EXTRACT_WARC ?= /tmp/tokenmill-evalwarc
bench-extract: install
	$(PY) -m pip install -q 'trafilatura>=2,<3' 'readability-lxml>=0.8,<1'
	$(PY) -m benchmarks.build_eval_warc --tests $(TRAFILATURA_TESTS) --output $(EXTRACT_WARC)
	$(PY) -m benchmarks.bench_extract --warc $(EXTRACT_WARC) --trafilatura-tests $(TRAFILATURA_TESTS) \
		$(if $(wildcard $(ZYTE_BENCHMARK)/ground-truth.json),--zyte $(ZYTE_BENCHMARK)) \
		$(if $(wildcard $(READABILITY_PAGES)/test/test-pages),--readability $(READABILITY_PAGES)) \
		$(if $(wildcard $(MODERN_PAGES)/test/ground-truth),--modern $(MODERN_PAGES))

# The cleaning profiles (web, docs, code) on documentation and source code of this machine's packages.
eval-profiles: install
	$(PY) -m benchmarks.eval_profiles

# The docs profile on documentation it was not tuned on (Debian packages fetched with apt-get download into
# .bench/docs-set/ the first time): the held-out part, the final figure; tune on `--part tuning`.
eval-docs-carryover: install
	$(PY) -m benchmarks.eval_docs_carryover --part held-out

# Benchmark items planted in the sample's documents: tokenmill against the GPT-3 13-gram rule and datatrove's
# n-gram filter (in .bench/datatrove-venv, made the first time), 100,000 items (distractors from the man pages).
bench-decontaminate: install
	$(PY) -m benchmarks.bench_decontaminate

# On a machine with a CUDA device: the CUDA tests, the device ring and bench_train for 125m and 1b, one table.
gpu-check: install
	$(PY) -m benchmarks.gpu_check

# Cost curves: corpora of real paragraphs at 1x, 4x, 16x (10 MB at 1x; .bench/scale/), every stage and the
# pipeline as users run them, datatrove's filters and MinHash side by side (docs/scale.md).
bench-scale: install
	$(PY) -m benchmarks.bench_scale --json .bench/scale/runs.json

# Quality classifiers: tokenmill's against fastText's own train_supervised and predict (installed in
# .bench/fasttext-venv the first time) on tests/labelled/classifier_set.py; web pages from bench-extract's WARC.
bench-classifier: install
	$(PY) -m benchmarks.bench_classifier $(if $(wildcard $(EXTRACT_WARC)/eval.warc.gz),--web-pages $(EXTRACT_WARC)/eval.warc.gz)
	$(if $(wildcard $(EXTRACT_WARC)/eval.warc.gz),$(PY) -m benchmarks.eval_classifier_chrome --warc $(EXTRACT_WARC)/eval.warc.gz)
	$(if $(wildcard $(EXTRACT_WARC)/eval.warc.gz),$(PY) -m benchmarks.eval_classifier_web_junk --warc $(EXTRACT_WARC)/eval.warc.gz)

# Paragraph dedup against Dolma's and datatrove's (each in a venv of its own under .bench/, made the first time).
bench-paragraphs: install
	$(PY) -m benchmarks.bench_paragraphs

bench-dedup: install
	$(PY) -m benchmarks.bench_dedup

eval-dedup: install
	$(PY) -m benchmarks.eval_dedup_quality

# Needs the large corpus: see data/build_tokenizer_corpus.py (TOKENIZER_CORPUS defaults to its example path).
TOKENIZER_CORPUS ?= /tmp/corpus/docs
bench-tokenizer: install
	$(PY) -m benchmarks.bench_tokenizer --corpus $(TOKENIZER_CORPUS)

# Do superwords hurt learning? make train-sized runs with the hybrid and the superword hybrid, held-out bits/byte.
bench-superword-learning: install
	$(PY) -m benchmarks.bench_superword_learning

# The tokenize job against bare encode_batch; defaults to make shards' outputs.
bench-tokenize: install
	$(PY) -m benchmarks.bench_tokenize

# The loader against pyarrow, a memmap, litdata and mosaicml-streaming (installed in .bench/loader-venv the
# first time); defaults to make shards' output copied to 1 GB. LOADER_SHARDS=DIR for other shards.
LOADER_SHARDS ?= $(OUT)/shards
bench-loader: install
	$(PY) -m benchmarks.bench_loader --shards $(LOADER_SHARDS)

# Three sources with weights: ShardLoader against mosaicml-streaming and litdata mixtures (same venv).
bench-mixture: install
	test -f $(LOADER_SHARDS)/index.json || $(MAKE) shards
	$(PY) -m benchmarks.bench_mixture --shards $(LOADER_SHARDS)
# One core, the compiled kernels against their references (each prints a table, then one JSON line).
MINHASH_INPUT ?= $(SAMPLE)
bench-minhash: install
	$(PY) -m benchmarks.bench_minhash --input $(MINHASH_INPUT)

ENCODE_TOKENIZER ?= $(OUT)/tokenizer/tokenizer.json
ENCODE_INPUT ?= $(SAMPLE)
bench-encode: install
	test -f $(ENCODE_TOKENIZER) || $(MAKE) shards
	$(PY) -m benchmarks.bench_encode --tokenizer $(ENCODE_TOKENIZER) --input $(ENCODE_INPUT)
