"""Quality classifiers side by side, one run: tokenmill's (prep/classify/) against fastText's own
train_supervised and predict (the `fasttext` library, in .bench/fasttext-venv, made the first time), on the
labelled set of tests/labelled/classifier_set.py (prose, documentation and, with --web-pages, the main text
of trafilatura's evaluation pages as the good; web spam and the hard cases as the junk; English and
Chinese), trained on 80% of it and measured on the other 20% (split by the document each item was made from).

Prints: ROC AUC overall and per kind of junk; the junk kept at the share of good documents the web rules keep,
beside the rules; training seconds and scoring MB/s per core (one thread each), fastText on the same text
form, and fastText's predict of tokenmill's own model (the same scores: checked).

    python -m benchmarks.bench_classifier [--web-pages EVAL.warc.gz] [--fasttext-python PY] [--seed 0]
"""

import argparse
import json
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from benchmarks.peer_venv import peer_python
from prep.classify import fasttext_bin
from prep.classify.classifier import Classifier
from prep.classify.metrics import roc_auc
from prep.classify.predict import Scorer
from prep.classify.stacking import train_classifier
from prep.classify.stats import document_stats
from prep.classify.text import model_line
from prep.classify.train import TrainConfig, train
from prep.clean import CleanConfig, clean_texts
from tests.labelled.classifier_set import HARD_KINDS, SPAM_KINDS, build, held_out

REPO = Path(__file__).resolve().parent.parent
RUNNER = REPO / "benchmarks" / "fasttext_runner.py"
TIMED_RUNS = 3  # training and scoring timed the best of three runs, both sides
# the held-out lines scored this many times over in each timed run of each predictor: one pass (1.2 MB) is
# over in 20-40 ms, and eight such passes in one process ran at 33-70 MB/s
SCORING_PASSES = 5


def fasttext_python(given: str | None) -> str:
    return peer_python("fasttext-venv", ["fasttext-numpy2-wheel", "numpy"], given)


def web_pages(warc: str, limit: int = 600) -> list[tuple[str, str]]:
    """(main text, language) of the pages of a WARC file (at least 500 characters each)."""
    from prep.extract.html_text import html_main_text
    from prep.extract.warc import Page, read_warc
    from prep.langid import LanguageConfig, identify_all

    texts = [html_main_text(o.payload, o.charset)[0] for o in read_warc(warc) if isinstance(o, Page)]
    texts = [t for t in texts if len(t) >= 500][:limit]
    return [(t, lang) for t, (lang, _) in zip(texts, identify_all(texts, LanguageConfig()))]


def raw(text: str) -> str:
    """A document as DCLM gave it to fastText: its white space collapsed to single spaces."""
    return " ".join(text.split())


def fasttext_run(python: str, folder: Path, name: str, train_lines, test_lines, labels, args: dict,
                 repeats: int = 1, passes: int = 1) -> dict:
    """fastText trained and predicting in its own environment on these lines (its times the best of `repeats`,
    each prediction timed over the test lines `passes` times; predict_seconds is for all of them)."""
    train_file, test_file = folder / f"{name}.train", folder / f"{name}.test"
    train_file.write_text("".join(f"__label__{label} {line}\n" for line, label in zip(train_lines, labels)))
    test_file.write_text("".join(line + "\n" for line in test_lines))
    done = subprocess.run([python, str(RUNNER), str(train_file), str(test_file), json.dumps(args),
                           str(folder / f"{name}.bin"), str(repeats), str(passes)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def aucs(good: np.ndarray, test) -> dict[str, float]:
    """ROC AUC of the good against all junk and against each kind of it."""
    is_good = np.array([x.good for x in test])
    out = {"all": roc_auc(good[is_good], good[~is_good])}
    for kind in HARD_KINDS + SPAM_KINDS:
        mine = np.array([x.kind == kind for x in test])
        langs = {x.lang for x in test if x.kind == kind}
        same = is_good & np.array([x.lang in langs for x in test])
        if mine.any():
            out[kind] = roc_auc(good[same], good[mine])
    return out


def kept_at(good: np.ndarray, test, share: float) -> float:
    """The share of junk kept when the threshold keeps `share` of the good."""
    is_good = np.array([x.good for x in test])
    return float(kept_mask(good, is_good, share)[~is_good].mean())


def kept_mask(good: np.ndarray, is_good: np.ndarray, share: float) -> np.ndarray:
    """The documents a threshold keeps that keeps `share` of the good ones."""
    return good >= np.quantile(good[is_good], 1 - share)


def rules_keep(texts: list[str]) -> np.ndarray:
    """Whether the web rules (the clean job's defaults) keep each text."""
    return np.array([not isinstance(r, Exception) and r.reason is None for r in clean_texts(texts, CleanConfig())])


def side_by_side(training: list[str], labels: list[str], origins: list[str], test: list[str], python: str,
                 folder: Path) -> dict[str, np.ndarray]:
    """The probability of "good" of each test text by tokenmill's classifier (its folds by a hash of each
    training text's origin) and by fastText's defaults and word bigrams, each trained on the same texts (the
    evaluations beside this benchmark)."""
    cfg = TrainConfig()
    folds = np.array([zlib.crc32(origin.encode()) & 1 for origin in origins])
    model, _ = train_classifier([model_line(t, cfg.max_tokens) for t in training], document_stats(training), labels,
                                folds, cfg)
    ours = Classifier(model).probabilities_of([model_line(t, cfg.max_tokens) for t in test], document_stats(test))
    out = {"tokenmill": ours[:, model.labels.index("good")]}
    for name, settings in (("fastText, its defaults", {}), ("fastText, word bigrams", {"wordNgrams": 2})):
        found = fasttext_run(python, folder, f"run{len(out)}", [raw(t) for t in training], [raw(t) for t in test],
                             labels, settings)
        out[name] = np.array(found["good"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--web-pages", help="a WARC file of pages (benchmarks/build_eval_warc.py's eval.warc.gz)")
    parser.add_argument("--fasttext-python", help="a Python with the fasttext library (default: made in .bench/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = build(args.seed, web_pages=web_pages(args.web_pages) if args.web_pages else ())
    training, test = [x for x in items if not held_out(x.origin)], [x for x in items if held_out(x.origin)]
    labels = ["good" if x.good else "junk" for x in training]
    cfg = TrainConfig()
    started = time.process_time()
    train_lines = [model_line(x.text, cfg.max_tokens) for x in training]
    test_lines = [model_line(x.text, cfg.max_tokens) for x in test]
    form_seconds = time.process_time() - started
    text_mb = sum(len(x.text.encode()) for x in training + test) / 1e6
    started = time.process_time()
    train_stats, test_stats = document_stats([x.text for x in training]), document_stats([x.text for x in test])
    stats_seconds = time.process_time() - started
    # the trainer's compiled kernels loaded (0.3-0.5 s) before the clock, as fastText's library is
    warm = [labels.index("good"), labels.index("junk")]
    train([train_lines[k] for k in warm], [labels[k] for k in warm], cfg)
    ngrams, train_seconds = best_of(lambda: train(train_lines, labels, cfg)[0])
    folds = np.array([zlib.crc32(x.origin.encode()) & 1 for x in training])
    started = time.process_time()
    model, _ = train_classifier(train_lines, train_stats, labels, folds, cfg)
    stacked_seconds = time.process_time() - started
    scorer = Scorer(ngrams)
    first = scorer.probabilities(test_lines)[:, ngrams.labels.index("good")]  # also compiles it before the clock
    scoring_lines = test_lines * SCORING_PASSES
    _, score_seconds = best_of(lambda: scorer.probabilities(scoring_lines))
    ours = Classifier(model).probabilities_of(test_lines, test_stats)[:, model.labels.index("good")]
    line_mb = sum(len(line.encode()) for line in test_lines) / 1e6
    scoring_mb = line_mb * SCORING_PASSES

    python = fasttext_python(args.fasttext_python)
    results = {"tokenmill: n-grams, then the second stage": ours, "tokenmill's n-gram model alone": first}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs = {"fastText defaults (the text as it is)": ([raw(x.text) for x in training],
                                                         [raw(x.text) for x in test], {}),
                "fastText, word bigrams (the text as it is)": ([raw(x.text) for x in training],
                                                               [raw(x.text) for x in test], {"wordNgrams": 2}),
                "fastText, tokenmill's settings and text form": (train_lines, test_lines, {
                    "wordNgrams": cfg.word_ngrams, "dim": cfg.dim, "epoch": cfg.epoch, "lr": cfg.lr,
                    "bucket": cfg.bucket, "minCount": 1, "loss": "softmax", "thread": 1})}
        timings = {}
        for name, (train_in, test_in, settings) in runs.items():
            found = fasttext_run(python, folder, f"run{len(timings)}", train_in, test_in, labels, settings,
                                 TIMED_RUNS, SCORING_PASSES)
            results[name] = np.array(found["good"])
            timings[name] = found
        fasttext_bin.write(ngrams, str(folder / "ours.bin"), whole=True)
        parity, predict_seconds = _library_predict(str(folder / "ours.bin"), test_lines, first, scoring_lines)

    kept_by_rules = rules_keep([x.text for x in test])
    is_good = np.array([x.good for x in test])
    share = float(kept_by_rules[is_good].mean())
    print(f"{len(training)} items trained on, {len(test)} held out ({int(is_good.sum())} good); "
          f"the web rules keep {share:.1%} of the good and {kept_by_rules[~is_good].mean():.1%} of the junk\n")
    table = {name: aucs(scores, test) for name, scores in results.items()}
    kinds = list(next(iter(table.values())))
    print("| classifier | " + " | ".join(kinds) + " | junk kept at the rules' share of good |")
    print("|---" * (len(kinds) + 2) + "|")
    for name, row in table.items():
        print(f"| {name} | " + " | ".join("" if row[k] is None else f"{row[k]:.3f}" for k in kinds)
              + f" | {kept_at(results[name], test, share):.1%} |")
    print("| the web rules |" + " |" * len(kinds) + f" {kept_by_rules[~is_good].mean():.1%} |\n")
    ours = results["tokenmill: n-grams, then the second stage"]
    threshold = np.quantile(ours[is_good], 1 - share)
    kept = [x.kind for x, score in zip(test, ours) if not x.good and score >= threshold]
    print(f"junk tokenmill keeps at that share: {', '.join(f'{k} {kept.count(k)}' for k in sorted(set(kept)))} "
          f"of {int((~is_good).sum())}\n")
    print("| per core, one thread | train | score |\n|---|---|---|")
    print(f"| tokenmill, the n-gram model | {train_seconds:.2f} s | "
          f"{scoring_mb / score_seconds:.1f} MB/s of text form |")
    print(f"| tokenmill, both stages (three n-gram models: two folds, then all) | {stacked_seconds:.2f} s | "
          f"statistics {text_mb / stats_seconds:.1f} MB/s of text |")
    same = timings["fastText, tokenmill's settings and text form"]
    print(f"| fastText, same settings and text form | {same['train_seconds']:.2f} s | "
          f"{scoring_mb / same['predict_seconds']:.1f} MB/s |")
    print(f"| fastText's predict of tokenmill's model | | {scoring_mb / predict_seconds:.1f} MB/s (largest difference "
          f"in probability {parity:.1e}) |")
    print(f"\ntext form: {form_seconds:.2f} s for {text_mb:.1f} MB of text ({text_mb / form_seconds:.1f} MB/s)")
    print(json.dumps({"aucs": table, "share_good_kept_by_rules": share, "train_seconds": stacked_seconds,
                      "score_mb_per_s": scoring_mb / score_seconds,
                      "fasttext": {k: {"train_seconds": v["train_seconds"], "predict_seconds": v["predict_seconds"]}
                                   for k, v in timings.items()}}))


def best_of(work):
    """(what `work()` returns, the least CPU seconds of TIMED_RUNS runs of it), as timeit reports: a pass of a
    fraction of a second on a shared machine is mostly noise."""
    seconds = float("inf")
    for _ in range(TIMED_RUNS):
        started = time.process_time()
        result = work()
        seconds = min(seconds, time.process_time() - started)
    return result, seconds


def _library_predict(path: str, lines: list[str], ours: np.ndarray, timed: list[str]) -> tuple[float, float]:
    """(the largest difference between fastText's predict of `lines` and tokenmill's scores, fastText's CPU
    seconds for the `timed` lines)."""
    import fasttext  # fasttext-predict: fastText's own predict

    model = fasttext.load_model(path)
    # a line at a time: this build's list form differs
    predicted = [model.predict(line, k=-1) for line in lines]
    _, seconds = best_of(lambda: [model.predict(line, k=-1) for line in timed])
    theirs = np.array([dict(zip(ls, ps)).get("__label__good", 0.0) - 1e-5 for ls, ps in predicted])
    return float(np.abs(theirs - ours).max()), seconds


if __name__ == "__main__":
    main()
