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

from benchmarks.bench_classifier import fasttext_python, kept_mask, rules_keep, side_by_side
from prep.classify.metrics import roc_auc
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
    with tempfile.TemporaryDirectory() as tmp:
        results = side_by_side([t for t, _, _ in training], labels, [url for _, _, url in training],
                               [t for t, _, _ in test], fasttext_python(args.fasttext_python), Path(tmp))
    is_good = np.array([good for _, good, _ in test])
    kept = rules_keep([text for text, _, _ in test])
    share = float(kept[is_good].mean())
    print(f"{len(training)} documents trained on, {len(test)} held out ({int(is_good.sum())} good); the web rules "
          f"keep {share:.1%} of the good and {kept[~is_good].mean():.1%} of the chrome\n")
    print("| classifier | ROC AUC | chrome kept at the rules' share of good |\n|---|---|---|")
    for name, scores in results.items():
        print(f"| {name} | {roc_auc(scores[is_good], scores[~is_good]):.4f} | "
              f"{kept_mask(scores, is_good, share)[~is_good].mean():.1%} |")


if __name__ == "__main__":
    main()
