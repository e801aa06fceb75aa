"""The hard kinds made from real web pages in a dozen languages: does the classifier carry past English and
Chinese documentation? In the set of `make bench-classifier` every page of another language is good, so a
model could learn the language as the label. Here the four hard kinds of tests/labelled/classifier_set.py
that need no template (word salad, sentences shuffled across and within documents, keyword stuffing) are made
from the main text of each page of a WARC (benchmarks/build_eval_warc.py: trafilatura's evaluation pages), in
the page's own language and from pages of that language, and measured against those pages' main text. The
held-out part is classifier_set's (20%, by a hash of the page a document was made from). One run, two
trainings, each for tokenmill and for fastText (its defaults, and word bigrams):

- carried over: trained on bench-classifier's training part alone (no junk made from the pages);
- trained on them: the same, and the junk made from the training part's pages.

    python -m benchmarks.eval_classifier_web_junk --warc EVAL.warc.gz
"""

import argparse
import random
import tempfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.bench_classifier import fasttext_python, fasttext_run, raw, web_pages
from prep.classify.classifier import Classifier
from prep.classify.metrics import roc_auc
from prep.classify.stacking import train_classifier
from prep.classify.stats import document_stats
from prep.classify.text import model_line
from prep.classify.train import TrainConfig
from prep.clean import CleanConfig, clean_texts
from tests.labelled.classifier_set import Labelled, build, hard, held_out

KINDS = ("word_salad", "shuffled_across", "shuffled_within", "keyword_stuffed")
MIN_PAGES = 10  # a language's own line in the table needs this many held-out pages


def made_from_pages(pages: list[Labelled], seed: int) -> list[Labelled]:
    """One document of each kind per page, from the pages of its language; `origin` the page's."""
    rng = random.Random(seed)
    by_language: dict[str, list[Labelled]] = {}
    for page in pages:
        by_language.setdefault(page.lang, []).append(page)
    return [Labelled(hard(kind, page, [p for p in by_language[page.lang] if p is not page] or [page], rng),
                     page.lang, kind, page.origin) for page in pages for kind in KINDS]


def scores(training: list[Labelled], test: list[Labelled], python: str, folder: Path) -> dict[str, np.ndarray]:
    """The probability of good for each test document: tokenmill's classifier and fastText's two settings."""
    cfg = TrainConfig()
    labels = ["good" if x.good else "junk" for x in training]
    lines = [model_line(x.text, cfg.max_tokens) for x in training]
    folds = np.array([zlib.crc32(x.origin.encode()) & 1 for x in training])
    model, _ = train_classifier(lines, document_stats([x.text for x in training]), labels, folds, cfg)
    ours = Classifier(model).probabilities_of([model_line(x.text, cfg.max_tokens) for x in test],
                                              document_stats([x.text for x in test]))
    out = {"tokenmill": ours[:, model.labels.index("good")]}
    for name, settings in (("fastText, its defaults", {}), ("fastText, word bigrams", {"wordNgrams": 2})):
        found = fasttext_run(python, folder, f"run{len(out)}", [raw(x.text) for x in training],
                             [raw(x.text) for x in test], labels, settings)
        out[name] = np.array(found["good"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warc", required=True, help="benchmarks/build_eval_warc.py's eval.warc.gz")
    parser.add_argument("--fasttext-python", help="a Python with the fasttext library (default: made in .bench/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = build(args.seed, web_pages=web_pages(args.warc))
    pages = [x for x in items if x.kind == "web_page"]
    made = made_from_pages(pages, args.seed)
    base = [x for x in items if not held_out(x.origin)]
    test = [x for x in pages + made if held_out(x.origin)]
    python = fasttext_python(args.fasttext_python)
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"carried over": scores(base, test, python, Path(tmp)),
                "trained on them": scores(base + [x for x in made if not held_out(x.origin)], test, python,
                                          Path(tmp))}
    is_good = np.array([x.good for x in test])
    kept_by_rules = np.array([not isinstance(r, Exception) and r.reason is None
                              for r in clean_texts([x.text for x in test], CleanConfig())])
    share = float(kept_by_rules[is_good].mean())
    languages = Counter(x.lang for x in test if x.good)
    print(f"{int(is_good.sum())} held-out pages ({', '.join(f'{k} {n}' for k, n in languages.most_common())}), "
          f"{int((~is_good).sum())} documents made from them; the web rules keep {share:.1%} of the pages and "
          f"{kept_by_rules[~is_good].mean():.1%} of what was made from them\n")
    own = [lang for lang, n in languages.most_common() if n >= MIN_PAGES]
    columns = ["all", *KINDS, *(f"all, {lang}" for lang in own)]
    print("| trained | classifier | " + " | ".join(columns) + f" | junk kept at the rules' share ({share:.1%}) |")
    print("|---" * (len(columns) + 3) + "|")
    for trained, results in runs.items():
        for name, good in results.items():
            row = [roc_auc(good[is_good], good[~is_good])]
            row += [roc_auc(good[is_good], good[np.array([x.kind == kind for x in test])]) for kind in KINDS]
            for lang in own:
                mine = np.array([x.lang == lang for x in test])
                row.append(roc_auc(good[is_good & mine], good[~is_good & mine]))
            threshold = np.quantile(good[is_good], 1 - share)
            print(f"| {trained} | {name} | " + " | ".join(f"{v:.3f}" for v in row)
                  + f" | {(good[~is_good] >= threshold).mean():.1%} |")
    print("| | the web rules |" + " |" * len(columns) + f" {kept_by_rules[~is_good].mean():.1%} |")


if __name__ == "__main__":
    main()
