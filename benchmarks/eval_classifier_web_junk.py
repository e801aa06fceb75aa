"""The hard kinds made from real web pages in a dozen languages: does the classifier carry past English and
Chinese documentation? In the set of `make bench-classifier` every page of another language is good, so a
model could learn the language as the label. Here the four hard kinds of tests/labelled/classifier_set.py
that need no template (word salad, sentences shuffled across and within documents, keyword stuffing) are made
from the main text of each page of a WARC (benchmarks/build_eval_warc.py: trafilatura's evaluation pages), in
the page's own language and from pages of that language on its side of the split, and measured against
those pages' main text. The held-out part is classifier_set's (20%, by a hash of the page a document was made
from). One run, two trainings, each for tokenmill and for fastText (its defaults, and word bigrams):

- carried over: trained on bench-classifier's training part alone (no junk made from the pages);
- trained on them: the same, and the junk made from the training part's pages.

    python -m benchmarks.eval_classifier_web_junk --warc EVAL.warc.gz
"""

import argparse
import random
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.bench_classifier import fasttext_python, kept_mask, rules_keep, side_by_side, web_pages
from prep.classify.metrics import roc_auc
from tests.labelled.classifier_set import HARD_KINDS, Labelled, build, hard, held_out

KINDS = tuple(kind for kind in HARD_KINDS if kind != "machine_boilerplate")  # its templates: English and Chinese
MIN_PAGES = 10  # a language's own line in the table needs this many held-out pages


def made_from_pages(pages: list[Labelled], seed: int) -> list[Labelled]:
    """One document of each kind per page, from the pages of its language on its side of the split (no
    sentence of a held-out page in a training document); `origin` the page's."""
    rng = random.Random(seed)
    pools: dict[tuple[str, bool], list[Labelled]] = {}
    for page in pages:
        pools.setdefault((page.lang, held_out(page.origin)), []).append(page)
    return [Labelled(hard(kind, page, [p for p in pools[page.lang, held_out(page.origin)] if p is not page] or [page],
                          rng), page.lang, kind, page.origin) for page in pages for kind in KINDS]


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
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for trained, training in (("carried over", base),
                                  ("trained on them", base + [x for x in made if not held_out(x.origin)])):
            runs[trained] = side_by_side([x.text for x in training], ["good" if x.good else "junk" for x in training],
                                         [x.origin for x in training], [x.text for x in test], python, Path(tmp))
    is_good = np.array([x.good for x in test])
    kept_by_rules = rules_keep([x.text for x in test])
    share = float(kept_by_rules[is_good].mean())
    languages = Counter(x.lang for x in test if x.good)
    print(f"{int(is_good.sum())} held-out pages ({', '.join(f'{k} {n}' for k, n in languages.most_common())}), "
          f"{int((~is_good).sum())} documents made from them; the web rules keep {share:.1%} of the pages and "
          f"{kept_by_rules[~is_good].mean():.1%} of what was made from them\n")
    own = [lang for lang, n in languages.most_common() if n >= MIN_PAGES]
    mine = {lang: np.array([x.lang == lang for x in test]) for lang in own}
    columns = ["all", *KINDS, *(f"all, {lang}" for lang in own)]
    kept_columns = ["all", *own]
    print("| trained | classifier | " + " | ".join(columns) + " | "
          + " | ".join(f"junk kept, {c}" for c in kept_columns) + " |")
    print("|---" * (len(columns) + len(kept_columns) + 2) + "|")
    kinds_kept = {}
    for trained, results in runs.items():
        for name, good in results.items():
            row = [roc_auc(good[is_good], good[~is_good])]
            row += [roc_auc(good[is_good], good[np.array([x.kind == kind for x in test])]) for kind in KINDS]
            row += [roc_auc(good[is_good & mine[lang]], good[~is_good & mine[lang]]) for lang in own]
            kept = kept_mask(good, is_good, share)
            kinds_kept[trained, name] = Counter(x.kind for x, k in zip(test, kept) if k and not x.good)
            print(f"| {trained} | {name} | " + " | ".join(f"{v:.3f}" for v in row) + " | "
                  + " | ".join(f"{kept[~is_good & m].mean():.1%}" for m in [~is_good, *mine.values()]) + " |")
    print("| | the web rules |" + " |" * len(columns) + " "
          + " | ".join(f"{kept_by_rules[~is_good & m].mean():.1%}" for m in [~is_good, *mine.values()]) + " |\n")
    for (trained, name), kinds in kinds_kept.items():
        if name == "tokenmill":
            print(f"junk {name} keeps at the rules' share, {trained}: "
                  + ", ".join(f"{kind} {kinds[kind]}" for kind in KINDS) + f" of {int((~is_good).sum())}")
    page_kept = {x.origin: k for x, k in zip(test, kept_by_rules) if x.good}
    agree = sum(k == page_kept[x.origin] for x, k in zip(test, kept_by_rules) if not x.good)
    print(f"the web rules decide {agree} of the {int((~is_good).sum())} documents made from a page as they decide the "
          "page")


if __name__ == "__main__":
    main()
