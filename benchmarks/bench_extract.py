"""Extraction benchmark: tokenmill's main-text extractor (alone, and with trafilatura for the pages it
reads little of: `--extractor hybrid`) against trafilatura (its default, fast and precision modes), resiliparse's
main-content extraction and readability-lxml, on the same pages of one WARC file
(benchmarks/build_eval_warc.py: trafilatura's own evaluation pages), one core each; then the
extract job end to end on the same WARC, copied to more pages; then, where given, the accuracy of each on a
second set of pages (the rules were tuned on trafilatura's): Zyte's article-extraction benchmark
(github.com/scrapinghub/article-extraction-benchmark, 181 pages with their article's text), also on its
tuning part and on its held-out part (zyte_tuning: the rules are looked at against the first only); and a
third set never looked at while tuning: the 130 test pages of Mozilla's Readability (github.com/mozilla/
readability, test/test-pages/*: a page and Readability.js's article from it), real sites and shapes that
broke it, scored as Zyte's are against Readability's own output (so readability-lxml, a port of it, is
not a fair peer there); and a fourth, of 2025's web (github.com/Murrough-Foley/web-content-extraction-
benchmark: 2,000 pages of as many sites, articles, docs, forums, product and service pages, their main
content annotated with a model's help), whose dev part the rules were looked at against and whose test part
never.

    python -m benchmarks.bench_extract --warc /tmp/evalwarc [--job-copies 24] [--zyte DIR] [--readability DIR]
        [--modern DIR]

Accuracy on trafilatura's pages is trafilatura's own measure (tests/eval_common.py): a page's text should
hold each of its "with" snippets and none of its "without" ones, white space normalized; precision, recall
and F1 over all snippets. On Zyte's pages it is that benchmark's: the 4-word shingles of the text against
those of the article, counted per page and normalized by the page's total, precision and recall averaged
over the pages. Speed is pages per second of CPU time of the extraction alone (the page's bytes in, its text
out, decoding included), each extractor's best of `--turns` runs taken in rotation (run_turns), the WARC's MB
per second for tokenmill's whole read (records, decode, extract), and the job's pages per second of wall time
per core. Prints Markdown tables.
"""

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

from prep.extract.html_text import html_main_text
from prep.extract.pages import ExtractConfig, page_text
from prep.extract.warc import Page, read_warc

REPO = Path(__file__).resolve().parents[1]
HYBRID = ExtractConfig(extractor="hybrid")
DEFAULT, FAST = "trafilatura (fast=False, its default)", "trafilatura (fast=True)"
PRECISION = "trafilatura (favor_precision=True)"
TRAFILATURA = (DEFAULT, FAST, PRECISION)
WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def scores(texts: dict[str, str], annotations: dict) -> tuple[float, float, float]:
    tp = fp = fn = 0
    for url, item in annotations.items():
        text = _norm(texts.get(url) or "")
        found = sum(_norm(w) in text for w in item["with"])
        tp, fn, fp = tp + found, fn + len(item["with"]) - found, fp + sum(_norm(w) in text for w in item["without"])
    precision, recall = tp / max(1, tp + fp), tp / max(1, tp + fn)
    return precision, recall, 2 * precision * recall / max(1e-9, precision + recall)


def _shingles(text: str, n: int = 4) -> Counter:
    words = WORD.findall(text or "")
    return Counter(tuple(words[i:i + n]) for i in range(max(1, len(words) - n + 1)) if words[i:i + n])


def zyte_scores(texts: dict[str, str], truth: dict[str, str]) -> tuple[float, float, float]:
    """(precision, recall, F1) as Zyte's benchmark counts them: per page, the 4-word shingles in both, in the
    text only and in the article only, as shares of the page's total; precision and recall averaged over
    the pages where they are defined (a page with nothing on either side is in neither average)."""
    return _averaged([page_scores(texts.get(key, ""), article) for key, article in truth.items()])


def page_scores(text: str, article: str) -> tuple[float | None, float | None]:
    """(precision, recall) of one page as zyte_scores counts them, None where not defined."""
    mine, theirs = _shingles(text), _shingles(article)
    tp = sum((mine & theirs).values())
    fp, fn = sum((mine - theirs).values()), sum((theirs - mine).values())
    precision = (1.0 if fp == fn == 0 else tp / (tp + fp)) if tp + fp else None
    recall = (1.0 if fp == fn == 0 else tp / (tp + fn)) if tp + fn else None
    return precision, recall


def _averaged(pages: list[tuple[float | None, float | None]]) -> tuple[float, float, float]:
    precisions = [precision for precision, _ in pages if precision is not None]
    recalls = [recall for _, recall in pages if recall is not None]
    precision, recall = sum(precisions) / max(1, len(precisions)), sum(recalls) / max(1, len(recalls))
    return precision, recall, 2 * precision * recall / max(1e-9, precision + recall)


BOOTSTRAP_DRAWS = 2000


def difference_interval(mine: list[tuple], theirs: list[tuple], draws: int = BOOTSTRAP_DRAWS) -> tuple[float, float]:
    """The 95% interval of F1 (zyte_scores) of `mine` less that of `theirs`, each a page's page_scores in the
    same order, over the pages drawn again with replacement, the same draws for both (a paired bootstrap):
    how much of a difference on a few dozen pages the pages drawn could make. Seeded: the same every run."""
    rng, count, differences = random.Random(0), len(mine), []
    for _ in range(draws):
        drawn = [rng.randrange(count) for _ in range(count)]
        differences.append(_averaged([mine[i] for i in drawn])[2] - _averaged([theirs[i] for i in drawn])[2])
    differences.sort()
    return differences[int(0.025 * draws)], differences[int(0.975 * draws) - 1]


def _best_peer_difference(label: str, mine: list[tuple], peers: dict[str, list[tuple]]) -> str:
    """A line: tokenmill's F1 less the best of trafilatura's modes on the same pages, with difference_interval."""
    best = max(peers, key=lambda name: _averaged(peers[name])[2])
    low, high = difference_interval(mine, peers[best])
    return (f"{label}: tokenmill less {best}, F1 {_averaged(mine)[2] - _averaged(peers[best])[2]:+.3f} "
            f"(95% interval over {len(mine)} pages drawn again, a paired bootstrap: {low:+.3f} to {high:+.3f})")


def extractors() -> dict:
    import lxml.html
    import trafilatura
    from readability import Document
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree

    def decoded(body: bytes) -> str:
        return bytes_to_str(body, detect_encoding(body))

    def readability(body: bytes) -> str:
        return lxml.html.fromstring(Document(decoded(body)).summary()).text_content()

    options = {"include_comments": False, "include_tables": True}
    return {
        "tokenmill": lambda body: html_main_text(body)[0],
        f"tokenmill hybrid (trafilatura fast below {HYBRID.fallback_below} chars)":
            lambda body: page_text(body, None, HYBRID)[0],
        DEFAULT: lambda body: trafilatura.extract(body, fast=False, **options),
        FAST: lambda body: trafilatura.extract(body, fast=True, **options),
        PRECISION: lambda body: trafilatura.extract(body, favor_precision=True, **options),
        "resiliparse, main content": lambda body: extract_plain_text(HTMLTree.parse(decoded(body)),
                                                                     main_content=True),
        "readability-lxml": readability,
    }


def run_one(extract, pages: dict[str, bytes]) -> tuple[dict[str, str], float]:
    texts, started = {}, time.process_time()
    for url, body in pages.items():
        try:
            texts[url] = extract(body) or ""
        except Exception:  # noqa: BLE001  (a peer that fails on a page scores nothing there)
            texts[url] = ""
    return texts, time.process_time() - started


def run_turns(named: dict, pages: dict[str, bytes], turns: int) -> tuple[dict[str, dict[str, str]], dict[str, float]]:
    """(each extractor's texts, from its first run; its pages per second of CPU time, its best of `turns` runs).
    The runs go in rotation, every extractor once a turn: a machine that slows down during the benchmark (a
    neighbour on the host, its clock) slows them alike, where one run each, one after another, had the ratio
    of two extractors move by a sixth between runs of the same code."""
    texts, best = {}, {}
    for _ in range(max(1, turns)):
        for name, extract in named.items():
            out, seconds = run_one(extract, pages)
            texts.setdefault(name, out)
            best[name] = min(best.get(name, float("inf")), seconds)
    return texts, {name: len(pages) / max(seconds, 1e-9) for name, seconds in best.items()}


def warc_rate(path: Path) -> tuple[float, int]:
    """(MB of WARC per CPU second, pages) for tokenmill's whole read: records, decoding, extraction."""
    started, pages = time.process_time(), 0
    for outcome in read_warc(str(path)):
        if isinstance(outcome, Page):
            html_main_text(outcome.payload, outcome.charset)
            pages += 1
    return path.stat().st_size / 1e6 / (time.process_time() - started), pages


def job(folder: Path, copies: int, cores: int, extractor: str) -> tuple[float, int]:
    """(pages per second of wall time per core, pages) of `python -m jobs.extract` (its JVM's start included)
    on the WARC copied `copies` times."""
    with tempfile.TemporaryDirectory() as work:
        crawl = f"{work}/crawl"
        subprocess.run([sys.executable, "-m", "benchmarks.build_eval_warc", "--tests", str(folder / "tests"),
                        "--output", crawl, "--copies", str(copies)], cwd=REPO, check=True, capture_output=True)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "jobs.extract", "--input", crawl, "--output", f"{work}/out",
                        "--extractor", extractor, "--conf", f"spark.master=local[{cores}]"], cwd=REPO, check=True,
                       capture_output=True)
        seconds = time.perf_counter() - started
        pages = json.loads(Path(work, "out", "stats.json").read_text())["pages"]
    return pages / seconds / cores, pages


def zyte_tuning(key: str) -> bool:
    """Whether a page of Zyte's set is in the part the rules may be tuned on (60%, by a hash of its key); the
    other 40% is looked at only for this figure."""
    return zlib.crc32(key.encode()) % 5 < 3


def zyte(folder: Path) -> None:
    """Each extractor's accuracy on Zyte's pages (a clone of scrapinghub/article-extraction-benchmark): all,
    the tuning part, the held-out part."""
    truth = {key: item.get("articleBody", "") for key, item in
             json.loads((folder / "ground-truth.json").read_text(encoding="utf-8")).items()}
    pages = {key: gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes()) for key in truth}
    parts = {"all": set(truth), "tuning": {key for key in truth if zyte_tuning(key)}}
    parts["held out"] = parts["all"] - parts["tuning"]
    print(f"\nZyte's article-extraction benchmark: {len(pages)} pages ({len(parts['tuning'])} tuning, "
          f"{len(parts['held out'])} held out), accuracy only\n")
    print("| extractor | precision | recall | F1 | F1, tuning part | F1, held-out part |\n|---|---|---|---|---|---|")
    per_page = {}
    for name, extract in extractors().items():
        texts, _ = run_one(extract, pages)
        per_page[name] = {key: page_scores(texts.get(key, ""), article) for key, article in truth.items()}
        (precision, recall, f1), tuning, held = (_averaged([per_page[name][key] for key in keys])
                                                 for keys in parts.values())
        print(f"| {name} | {precision:.3f} | {recall:.3f} | {f1:.3f} | {tuning[2]:.3f} | {held[2]:.3f} |")
    print()
    for part, keys in parts.items():
        keys = sorted(keys)
        peers = {name: [scored[key] for key in keys] for name, scored in per_page.items() if name in TRAFILATURA}
        print(_best_peer_difference(f"Zyte's pages, {part}", [per_page["tokenmill"][key] for key in keys], peers))


def modern_pages(folder: Path, turns: int) -> None:
    """Each extractor's accuracy on a benchmark of 2025's web (a clone of github.com/Murrough-Foley/web-content-
    extraction-benchmark: pages of 2,000 sites, their main content annotated with a model's help, scored as
    Zyte's are): its dev part, which the rules were looked at against, and its test part, never looked at."""
    parts = {}
    for part in ("dev", "test"):
        truth, pages = {}, {}
        for path in sorted((folder / part / "ground-truth").glob("*.json")):
            annotated = json.loads(path.read_text(encoding="utf-8")).get("ground_truth", {})
            if "main_content" in annotated:  # a few pages have no annotated main content
                truth[path.stem] = annotated["main_content"]
                pages[path.stem] = gzip.decompress((folder / part / "html" / f"{path.stem}.html.gz").read_bytes())
        parts[part] = truth, pages
    print(f"\nThe web of 2025: {len(parts['dev'][0])} pages of the dev part (tuning), {len(parts['test'][0])} of the "
          "test part (held out), accuracy, and the pages per second of the test part on one core (the best of "
          f"{turns} runs in rotation)\n")
    print("| extractor | F1, dev | precision, test | recall, test | F1, test | pages/s |\n|---|---|---|---|---|---|")
    test_texts, rates = run_turns(extractors(), parts["test"][1], turns)
    for name, extract in extractors().items():
        dev = zyte_scores(run_one(extract, parts["dev"][1])[0], parts["dev"][0])
        precision, recall, f1 = zyte_scores(test_texts[name], parts["test"][0])
        print(f"| {name} | {dev[2]:.3f} | {precision:.3f} | {recall:.3f} | {f1:.3f} | {rates[name]:.0f} |")
    truth = parts["test"][0]
    scored = {name: [page_scores(test_texts[name].get(key, ""), truth[key]) for key in truth]
              for name in ("tokenmill", *TRAFILATURA)}
    print("\n" + _best_peer_difference("2025's test part", scored["tokenmill"],
                                       {name: scored[name] for name in TRAFILATURA}))


def readability_pages(folder: Path) -> None:
    """Each extractor's accuracy on Readability's test pages (a clone of mozilla/readability), the article of
    each as Readability.js gave it (expected.html, its text) the reference."""
    import lxml.html

    pages, truth = {}, {}
    for page in sorted((folder / "test" / "test-pages").iterdir()):
        expected = (page / "expected.html").read_bytes()
        truth[page.name] = lxml.html.fromstring(expected).text_content() if expected.strip() else ""
        pages[page.name] = (page / "source.html").read_bytes()
    print(f"\nReadability's test pages: {len(pages)} pages, never looked at while tuning, accuracy only (the "
          "reference is Readability.js's output)\n")
    print("| extractor | precision | recall | F1 |\n|---|---|---|---|")
    for name, extract in extractors().items():
        precision, recall, f1 = zyte_scores(run_one(extract, pages)[0], truth)
        print(f"| {name} | {precision:.3f} | {recall:.3f} | {f1:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warc", required=True, help="the folder build_eval_warc wrote")
    parser.add_argument("--trafilatura-tests", help="trafilatura's tests/ folder, for the job's copies")
    parser.add_argument("--job-copies", type=int, default=24, help="WARC files for the job's runs (0: none)")
    parser.add_argument("--job-extractors", default="tokenmill,hybrid", help="the job's runs, one per extractor")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--turns", type=int, default=3, help="timed runs of each extractor, in rotation (run_turns)")
    parser.add_argument("--zyte", help="a clone of github.com/scrapinghub/article-extraction-benchmark")
    parser.add_argument("--readability", help="a clone of github.com/mozilla/readability (its test pages)")
    parser.add_argument("--modern", help="a clone of github.com/Murrough-Foley/web-content-extraction-benchmark")
    args = parser.parse_args()
    folder = Path(args.warc)
    annotations = json.loads((folder / "annotations.json").read_text(encoding="utf-8"))
    pages = {o.url: o.payload for o in read_warc(str(folder / "eval.warc.gz")) if isinstance(o, Page)}
    print(f"{len(pages)} pages, {sum(map(len, pages.values())) / 1e6:.1f} MB of HTML, one core each, the rates "
          f"the best of {args.turns} runs in rotation, {time.strftime('%Y-%m-%d')}\n")
    print("| extractor | precision | recall | F1 | pages/s per core | vs trafilatura | vs trafilatura fast |\n"
          "|---|---|---|---|---|---|---|")
    texts, rates = run_turns(extractors(), pages, args.turns)
    for name in rates:
        precision, recall, f1 = scores(texts[name], annotations)
        print(f"| {name} | {precision:.3f} | {recall:.3f} | {f1:.3f} | {rates[name]:.0f} | "
              f"{rates[name] / rates[DEFAULT]:.2f}x | {rates[name] / rates[FAST]:.2f}x |")
    mb_per_s, _ = warc_rate(folder / "eval.warc.gz")
    print(f"\ntokenmill's whole read of the WARC (records, decoding, extraction): {mb_per_s:.1f} MB/s per core")
    if args.job_copies and args.trafilatura_tests:
        for extractor in args.job_extractors.split(","):
            per_core, count = job(Path(args.trafilatura_tests).parent, args.job_copies, args.cores, extractor)
            print(f"jobs.extract --extractor {extractor} end to end, local[{args.cores}], {count} pages: "
                  f"{per_core:.0f} pages/s per core: {per_core / rates[DEFAULT]:.2f}x trafilatura's default mode, "
                  f"{per_core / rates[FAST]:.2f}x its fast mode (their rates above)")
    if args.zyte:
        zyte(Path(args.zyte))
    if args.readability:
        readability_pages(Path(args.readability))
    if args.modern:
        modern_pages(Path(args.modern), args.turns)


if __name__ == "__main__":
    main()
