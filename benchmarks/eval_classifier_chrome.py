"""A labelled set the classifier was not designed on: real pages' main text (good) against the same pages'
chrome, the text of the page outside its main text (menus, footers, related links, cookie notices: junk),
from a WARC of real pages (benchmarks/build_eval_warc.py: trafilatura's 990 evaluation pages, a dozen
languages). Trained on 70% of the pages and measured on the other 30% (by a hash of the URL, so a page's
main text and its chrome are on one side), tokenmill's classifier against fastText's defaults and word
bigrams on the same split, one run; the junk kept at the share of good documents the web rules keep.

    python -m benchmarks.eval_classifier_chrome --warc EVAL.warc.gz
"""

import argparse
import tempfile
import zlib
from pathlib import Path

import numpy as np
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from benchmarks.bench_classifier import fasttext_python, fasttext_run, raw
from prep.classify.classifier import Classifier
from prep.classify.metrics import roc_auc
from prep.classify.stacking import train_classifier
from prep.classify.stats import document_stats
from prep.classify.text import model_line
from prep.classify.train import TrainConfig
from prep.clean import CleanConfig, clean_texts
from prep.extract.encoding import decode_html
from prep.extract.html_text import html_main_text
from prep.extract.warc import Page, read_warc

HELD_OUT_PERCENT = 30
MIN_MAIN, MIN_CHROME, MAX_CHROME = 500, 300, 8000  # characters


def labelled(warc: str) -> list[tuple[str, bool, str]]:
    """(text, good, url): each page's main text, and its chrome: the lines of the whole page's text that are
    not in the main text, each a block as the main text's paragraphs are."""
    items = []
    for page in read_warc(warc):
        if not isinstance(page, Page):
            continue
        main = html_main_text(page.payload, page.charset)[0]
        whole = extract_plain_text(HTMLTree.parse(decode_html(page.payload, page.charset)[0]), main_content=False)
        inside = {line.strip() for line in main.splitlines() if line.strip()}
        # as blocks, as the main text is (one per line of the page's text): not a layout only one side has
        chrome = "\n\n".join(line.strip() for line in whole.splitlines() if line.strip()
                             and not any(line.strip() in kept for kept in inside))
        if len(main) >= MIN_MAIN:
            items.append((main, True, page.url))
        if len(chrome) >= MIN_CHROME:
            items.append((chrome[:MAX_CHROME], False, page.url))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warc", required=True, help="a WARC of real pages (bench-extract's eval.warc.gz)")
    parser.add_argument("--fasttext-python", help="a Python with the fasttext library (default: made in .bench/)")
    args = parser.parse_args()
    items = labelled(args.warc)
    held = [zlib.crc32(("chrome:" + url).encode()) % 100 < HELD_OUT_PERCENT for _, _, url in items]
    training = [x for x, h in zip(items, held) if not h]
    test = [x for x, h in zip(items, held) if h]
    labels = ["good" if good else "junk" for _, good, _ in training]
    cfg = TrainConfig()
    train_lines = [model_line(text, cfg.max_tokens) for text, _, _ in training]
    test_lines = [model_line(text, cfg.max_tokens) for text, _, _ in test]
    folds = np.array([zlib.crc32(url.encode()) & 1 for _, _, url in training])
    model, _ = train_classifier(train_lines, document_stats([t for t, _, _ in training]), labels, folds, cfg)
    results = {"tokenmill": Classifier(model).probabilities_of(
        test_lines, document_stats([t for t, _, _ in test]))[:, model.labels.index("good")]}
    python = fasttext_python(args.fasttext_python)
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in {"fastText, its defaults": {}, "fastText, word bigrams": {"wordNgrams": 2}}.items():
            found = fasttext_run(python, Path(tmp), f"run{len(results)}", [raw(t) for t, _, _ in training],
                                 [raw(t) for t, _, _ in test], labels, settings)
            results[name] = np.array(found["good"])
    is_good = np.array([good for _, good, _ in test])
    rules = clean_texts([text for text, _, _ in test], CleanConfig())
    kept = np.array([not isinstance(r, Exception) and r.reason is None for r in rules])
    share = float(kept[is_good].mean())
    print(f"{len(training)} documents trained on, {len(test)} held out ({int(is_good.sum())} good); the web rules "
          f"keep {share:.1%} of the good and {kept[~is_good].mean():.1%} of the chrome\n")
    print("| classifier | ROC AUC | chrome kept at the rules' share of good |\n|---|---|---|")
    for name, scores in results.items():
        threshold = np.quantile(scores[is_good], 1 - share)
        print(f"| {name} | {roc_auc(scores[is_good], scores[~is_good]):.4f} | "
              f"{(scores[~is_good] >= threshold).mean():.1%} |")


if __name__ == "__main__":
    main()
