"""The cleaning profiles measured: for each of `web`, `docs` and `code`, the share kept of a documentation
corpus and of a source-code corpus built from this machine's own packages, and prose kept / junk
removed on the labelled sets (tests/labelled/quality_set.py). Prints a Markdown table.

    python -m benchmarks.eval_profiles [--documents N]

Documentation: every English man page under /usr/share/man (one family of near-identical generated
pages, gcloud's ~16,000, capped at 300 so that it does not stand for all of them), the GNU info
manuals under /usr/share/info (a node each) and the HTML manuals under /usr/share/doc. Source code:
the Python files of the installed packages and the C headers under /usr/include. Each document is
one file (or node), cut at a paragraph past 100,000 characters, as data/build_tokenizer_corpus.py
cuts; identical files are kept once.
"""

import argparse
import gzip
import hashlib
import random
import site
import sys
from collections import Counter
from pathlib import Path

from prep.clean import CleanConfig, clean_text
from prep.config import override
from tests.labelled.quality_set import build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from build_tokenizer_corpus import cut, man_text, visible_text  # noqa: E402

GENERATED_FAMILIES = ("gcloud", "bq", "gsutil")  # Google Cloud SDK's pages: one template, thousands of times
FAMILY_CAP = 300
PROFILES = ("web", "docs", "code")


def _read(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", errors="replace")


def _unique(paths):
    seen = set()
    for path in sorted(paths):
        if path.is_file() and not path.is_symlink():
            digest = hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
            if digest not in seen:
                seen.add(digest)
                yield path


def documentation(seed: int = 0) -> list[tuple[str, str]]:
    """(kind, text) of the documentation corpus."""
    man, generated = [], []
    for path in _unique(p for section in range(1, 9) for p in Path(f"/usr/share/man/man{section}").glob("*")):
        pages = generated if path.name.startswith(GENERATED_FAMILIES) else man
        pages += [("man", text) for text in cut(man_text(_read(path)))]
    man += random.Random(seed).sample(generated, min(FAMILY_CAP, len(generated)))
    info = [("info", node) for path in _unique(Path("/usr/share/info").glob("*.info*"))
            for node in _read(path).split("\x1f")[1:] for node in cut(node.split("\n", 2)[-1])]
    html = [("html", text) for path in _unique(Path("/usr/share/doc").rglob("*.html"))
            for text in cut(visible_text(_read(path)))]
    return [(kind, text) for kind, text in man + info + html if len(text) >= 200]


def source_code() -> list[tuple[str, str]]:
    """(kind, text) of the source-code corpus."""
    python = [("python", text) for root in site.getsitepackages() for path in _unique(Path(root).rglob("*.py"))
              for text in cut(_read(path))]
    headers = [("c", text) for path in _unique(Path("/usr/include").rglob("*.h")) for text in cut(_read(path))]
    return [(kind, text) for kind, text in python + headers if len(text) >= 200]


def kept_share(corpus: list[tuple[str, str]], cfg: CleanConfig) -> tuple[float, dict[str, float], Counter]:
    """(share kept, share kept by kind, rejections by reason)."""
    by_kind: dict[str, list[bool]] = {}
    reasons = Counter()
    for kind, text in corpus:
        reason = clean_text(text, cfg).reason
        by_kind.setdefault(kind, []).append(reason is None)
        reasons[reason] += reason is not None
    return (sum(sum(v) for v in by_kind.values()) / len(corpus),
            {kind: sum(v) / len(v) for kind, v in by_kind.items()}, reasons)


def labelled(cfg: CleanConfig) -> dict[str, tuple[float, float]]:
    """Per language: (prose kept, junk removed) on the labelled set."""
    result = {}
    items = build(0)
    for lang in ("en", "zh"):
        prose = [clean_text(x.text, cfg).reason is None for x in items if x.lang == lang and x.label == "prose"]
        junk = [clean_text(x.text, cfg).reason is None for x in items if x.lang == lang and x.label != "prose"]
        result[lang] = (sum(prose) / len(prose), 1 - sum(junk) / len(junk))
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=3000, help="documents of each corpus (a seeded sample)")
    args = parser.parse_args(argv)
    rng = random.Random(0)
    docs, code = documentation(), source_code()
    print(f"documentation: {len(docs)} documents ({dict(Counter(k for k, _ in docs))}); source code: {len(code)} "
          f"({dict(Counter(k for k, _ in code))}); a sample of {args.documents} of each")
    docs, code = (rng.sample(c, min(args.documents, len(c))) for c in (docs, code))
    print("\n| profile | documentation kept | source code kept | en prose kept | en junk removed | zh prose kept | "
          "zh junk removed |\n|---|---|---|---|---|---|---|")
    lost = {}
    for profile in PROFILES:
        cfg = override(CleanConfig(), {"profile": profile})
        (doc_kept, _, lost[profile]), (code_kept, _, _) = kept_share(docs, cfg), kept_share(code, cfg)
        scores = labelled(cfg)
        print(f"| `{profile}` | {doc_kept:.1%} | {code_kept:.1%} | {scores['en'][0]:.1%} | {scores['en'][1]:.1%} | "
              f"{scores['zh'][0]:.1%} | {scores['zh'][1]:.1%} |")
    for profile, reasons in lost.items():
        print(f"\n`{profile}`: documentation rejected by {dict(reasons.most_common(6))}")


if __name__ == "__main__":
    main()
