"""Does the `docs` profile carry over? Documentation in forms it was not tuned on, from Debian packages
it was not tuned on, with half of it kept unlooked-at for the final figure. Prints a Markdown table.

    python -m benchmarks.eval_docs_carryover [--part tuning|held-out] [--profiles web,docs]

The `docs` profile was tuned on this machine's man pages as roff source, its GNU info manuals and its
HTML manuals (benchmarks/eval_profiles.py) and on the sample corpus's Debian manuals. This set is
text as it is read on a terminal or shipped as a text edition, from the Debian 12 packages in PACKAGES
(downloaded with `apt-get download` into .bench/docs-set/, unpacked there, never installed):

- `text`: hard-wrapped plain-text manuals (Postfix's READMEs, Mutt's manual, Debian Policy, the
  Developer's Reference, Sendmail's operations guide and FAQ, the Debian history, X.Org's notes);
- `spec`: specifications written as RFCs are, in hard-wrapped text with numbered sections and
  tables of contents (X11's protocol and extensions, ICCCM, XLFD, XDMCP, deflate, the .xz and .lzma
  formats, dpkg's and Debian's specifications; Debian ships no RFC itself: it counts them as non-free);
- `info`: GNU manuals as info text of packages not installed here (automake, m4, bash, screen,
  exim's specification), a node each;
- `man`: man pages rendered as text by man(1) at 80 columns (nmh, postfix, lvm2, the autotools,
  mutt; Perl's pages, about 800, a seeded 150 of them);
- `zh-man`: the Chinese man pages of manpages-zh (Simplified), rendered the same way;
- `zh-text`: Chinese manuals as text editions, dumped by w3m at 80 columns (the Debian installation
  guide, the Debian Edu manual, KiCad's, LilyPond's and LinuxCNC's manuals).

A page of a Chinese package left in English (most of LilyPond's, some man pages) counts as `text` or
`man`.

Every document is cut at a paragraph once past PIECE_CHARS (about a section). Which part a document
is in follows from a hash of its file's path (every piece of one file in the same part): `tuning` is
what rules may be tuned on, `held-out` is looked at once, for the final figure. Junk: the labelled
junk of tests/labelled/quality_set.py, English and Chinese.
"""

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import zstandard

from prep.clean import CleanConfig, clean_texts
from prep.config import override
from prep.quality.text_units import cjk_fraction
from tests.labelled.quality_set import build

CACHE = Path(".bench/docs-set")
SET_VERSION = 3  # bump when the set's making changes: the cached set is rebuilt
PIECE_CHARS = 10_000
MIN_CHARS = 200
COLUMNS = "80"
PACKAGES = ("postfix-doc", "mutt", "debian-policy", "developers-reference", "sendmail-doc", "debian-history",
            "xorg-docs", "x11proto-dev", "liblzma-dev", "dpkg-dev", "automake", "m4", "bash-doc", "screen",
            "exim4-doc-info", "nmh", "postfix", "lvm2", "autoconf", "bison", "perl-doc", "manpages-zh",
            "installation-guide-amd64", "debian-edu-doc-zh-cn", "kicad-doc-zh", "lilypond-doc-html-zh",
            "linuxcnc-doc-zh-cn", "zlib1g-dev", "libxdmcp-dev", "w3m", "libgc1")
# (kind, glob under the unpacked packages)
TEXT_FILES = (
    ("text", "usr/share/doc/postfix/*README*"),
    ("text", "usr/share/doc/postfix/OVERVIEW*"),
    ("text", "usr/share/doc/mutt/manual.txt*"),
    ("text", "usr/share/doc/mutt/PGP-Notes.txt*"),
    ("text", "usr/share/doc/debian-policy/policy.txt*"),
    ("text", "usr/share/doc/debian-policy/upgrading-checklist.txt*"),
    ("text", "usr/share/doc/developers-reference/docs/developers-reference.txt*"),
    ("text", "usr/share/doc/sendmail-doc/op/op.txt*"),
    ("text", "usr/share/doc/sendmail-doc/faq.txt*"),
    ("text", "usr/share/doc/sendmail-doc/cf.README*"),
    ("text", "usr/share/doc/debian-history/docs/project-history.en.txt*"),
    ("text", "usr/share/doc/xorg-docs/README.txt*"),
    ("text", "usr/share/doc/xorg-docs/ReleaseNotes.txt*"),
    ("spec", "usr/share/doc/xorg-docs/*/*.txt*"),
    ("spec", "usr/share/doc/*proto*/*.txt*"),
    ("spec", "usr/share/doc/liblzma-dev/*-file-format.txt*"),
    ("spec", "usr/share/doc/zlib1g-dev/algorithm.txt*"),
    ("spec", "usr/share/doc/libxdmcp-dev/xdmcp.txt*"),
    ("spec", "usr/share/doc/dpkg/spec/*.txt"),
    ("spec", "usr/share/doc/debian-policy/copyright-format-1.0.txt*"),
    ("spec", "usr/share/doc/debian-policy/debconf_specification.txt*"),
    ("spec", "usr/share/doc/debian-policy/menu-policy.txt*"),
    ("spec", "usr/share/doc/debian-policy/perl-policy.txt*"),
    ("spec", "usr/share/doc/debian-policy/autopkgtest.txt*"),
)
INFO_FILES = ("usr/share/info/automake-1.16.info*", "usr/share/info/m4.info*", "usr/share/info/bash.info*",
              "usr/share/info/screen.info*", "usr/share/info/spec.info*", "usr/share/info/filter.info*")
HTML_FILES = ("usr/share/doc/installation-guide-amd64/zh_CN/*.html", "usr/share/doc/debian-edu-doc-zh-cn/*.html",
              "usr/share/doc/kicad/help/zh/*.html", "usr/share/doc/lilypond/html/**/*.zh.html",
              "usr/share/doc/linuxcnc/*_zh_CN.html")
ONE_PAGE_COPIES = "-big-page."  # LilyPond's manuals once more as one page each: left out
MAN_FILES = "usr/share/man/man[1-8]/*"
ZH_MAN_FILES = "usr/share/man/zh_CN/man[1-8]/*"
PERL_PAGES = 150  # Perl's ~800 pages are one manual: a sample, so that it does not stand for every man page
ZH_SHARE = 0.3  # Han and kana among the letters from which a text counts as Chinese
OVERSTRIKE = re.compile(".\x08")  # bold and underline as a terminal draws them: what col -b removes


def unpacked(cache: Path) -> Path:
    """The packages' files under cache/root, downloaded and unpacked the first time."""
    debs, root = cache / "debs", cache / "root"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in PACKAGES if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True)
    for deb in sorted(min(debs.glob(f"{p}_*.deb")) for p in PACKAGES):
        marker = root / ".unpacked" / deb.name
        if not marker.exists():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
    return root


def _read(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", errors="replace")


def _run(command: list[str], root: Path, stdin: bytes = b"") -> str:
    """The command's output as text; nothing if it fails or runs past a minute."""
    env = dict(os.environ, LANG="C.UTF-8", LD_LIBRARY_PATH=str(root / "usr/lib/x86_64-linux-gnu"))
    try:
        result = subprocess.run(command, input=stdin, capture_output=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        return ""
    return OVERSTRIKE.sub("", result.stdout.decode("utf-8", errors="replace")) if result.returncode == 0 else ""


def rendered_man(path: Path, root: Path) -> str:
    """A man page as man(1) shows it on a terminal COLUMNS wide (groff directly: man-db's pipeline
    stalls on some Chinese pages)."""
    roff = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return _run(["groff", "-k", "-t", "-Tutf8", "-mandoc", f"-rLL={COLUMNS}n", f"-rLT={COLUMNS}n", "-P-cbu"],
                root, roff)


def _pieces(text: str) -> list[str]:
    text = OVERSTRIKE.sub("", text).replace("\f", "\n").strip("\n")
    parts = []
    while len(text) > PIECE_CHARS:
        at = text.find("\n\n", PIECE_CHARS)
        if at < 0:
            break
        parts.append(text[:at])
        text = text[at:].lstrip("\n")
    return [p for p in parts + [text] if len(p.strip()) >= MIN_CHARS]


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.glob(pattern) if p.is_file() and not p.is_symlink())


def sources(root: Path) -> list[tuple[str, str, str]]:
    """(kind, path of the file under root, its whole text as read)."""
    found = [(kind, p, _read(p)) for kind, pattern in TEXT_FILES for p in _files(root, pattern)]
    for pattern in INFO_FILES:
        found += [("info", p, node.split("\n", 2)[-1]) for p in _files(root, pattern)
                  for node in _read(p).split("\x1f")[1:]]
    pages = _files(root, MAN_FILES)
    perl = [p for p in pages if "perl" in p.name.lower() or p.name.endswith(".3perl.gz")]
    pages = [p for p in pages if p not in perl] + random.Random(0).sample(perl, min(PERL_PAGES, len(perl)))
    found += [("man", p, rendered_man(p, root)) for p in sorted(pages)]
    found += [("zh-man", p, rendered_man(p, root)) for p in _files(root, ZH_MAN_FILES)]
    w3m = str(root / "usr/bin/w3m")
    found += [("zh-text", p, _run([w3m, "-dump", "-cols", COLUMNS, "-I", "UTF-8", "-O", "UTF-8", "-T", "text/html",
                                   str(p)], root)) for pattern in HTML_FILES for p in _files(root, pattern)
              if ONE_PAGE_COPIES not in p.name]
    return [(kind, str(p.relative_to(root)), text) for kind, p, text in found]


def _kind(kind: str, text: str) -> str:
    """A Chinese package's page left in English (many are: LilyPond's, some man pages) counts as English."""
    if kind.startswith("zh-") and cjk_fraction(text) < ZH_SHARE:
        return {"zh-man": "man", "zh-text": "text"}[kind]
    return kind


def part_of(path: str) -> str:
    """`tuning` or `held-out`, by a hash of the file's path (an info manual's numbered files are one)."""
    name = re.sub(r"\.info-\d+", ".info", path)
    return "tuning" if hashlib.blake2b(name.encode(), digest_size=8).digest()[0] < 128 else "held-out"


def documentation(cache: Path = CACHE) -> list[dict]:
    """The set: {kind, path, part, text} per document, cached in cache/set-vN.jsonl.zst."""
    stored = cache / f"set-v{SET_VERSION}.jsonl.zst"
    if not stored.exists():
        root, seen, docs = unpacked(cache), set(), []
        for kind, path, text in sources(root):
            digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
            if digest not in seen:  # the same page in two packages, once
                seen.add(digest)
                docs += [{"kind": _kind(kind, piece), "path": path, "part": part_of(path), "text": piece}
                         for piece in _pieces(text)]
        with zstandard.open(stored.with_suffix(".tmp"), "wt", encoding="utf-8") as out:
            out.writelines(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs)
        stored.with_suffix(".tmp").rename(stored)
    with zstandard.open(stored, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def measure(docs: list[dict], cfg: CleanConfig) -> tuple[dict[str, tuple[int, int]], dict[str, Counter]]:
    """Per kind: (kept, of how many), and the rejections by reason."""
    counts: dict[str, list[int]] = {}
    reasons: dict[str, Counter] = {}
    for doc, cleaned in zip(docs, clean_texts([d["text"] for d in docs], cfg)):
        kept = counts.setdefault(doc["kind"], [0, 0])
        kept[1] += 1
        if isinstance(cleaned, Exception) or cleaned.reason:
            reason = cleaned.reason if not isinstance(cleaned, Exception) else type(cleaned).__name__
            reasons.setdefault(doc["kind"], Counter())[reason] += 1
        else:
            kept[0] += 1
    return {kind: (k, n) for kind, (k, n) in counts.items()}, reasons


def junk_removed(cfg: CleanConfig) -> dict[str, tuple[float, float]]:
    """Per language: (labelled prose kept, labelled junk removed)."""
    items = build(0)
    result = {}
    for lang in ("en", "zh"):
        mine = [x for x in items if x.lang == lang]
        kept = [c.reason is None for c in clean_texts([x.text for x in mine], cfg)]
        prose = [k for k, x in zip(kept, mine) if x.label == "prose"]
        junk = [k for k, x in zip(kept, mine) if x.label != "prose"]
        result[lang] = (sum(prose) / len(prose), 1 - sum(junk) / len(junk))
    return result


KINDS = ("text", "spec", "info", "man", "zh-man", "zh-text")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("tuning", "held-out"), default="tuning",
                        help="which part of the set (held-out: the final figure, looked at once)")
    parser.add_argument("--profiles", default="web,docs", help="comma-separated profiles to measure")
    parser.add_argument("--reasons", action="store_true", help="also print the rejections by kind and reason")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the packages and the built set are kept")
    args = parser.parse_args(argv)
    docs = [d for d in documentation(args.cache) if d["part"] == args.part]
    files = {kind: len({d["path"] for d in docs if d["kind"] == kind}) for kind in KINDS}
    per_kind = Counter(d["kind"] for d in docs)
    print(f"part `{args.part}`: {len(docs)} documents from {sum(files.values())} files (documents/files: "
          + ", ".join(f"{k} {per_kind[k]}/{files[k]}" for k in KINDS) + ")\n")
    print("| profile | " + " | ".join(KINDS) + " | all | en junk removed | zh junk removed | en prose kept "
          "| zh prose kept |\n|---|" + "---|" * (len(KINDS) + 5))
    all_reasons = {}
    for profile in args.profiles.split(","):
        cfg = override(CleanConfig(), {"profile": profile})
        counts, all_reasons[profile] = measure(docs, cfg)
        kept, total = sum(k for k, _ in counts.values()), sum(n for _, n in counts.values())
        scores = junk_removed(cfg)
        cells = [f"{counts[k][0] / counts[k][1]:.1%}" if counts.get(k) else "-" for k in KINDS]
        print(f"| `{profile}` | " + " | ".join(cells) + f" | **{kept / total:.1%}** ({kept:,} of {total:,}) | "
              f"{scores['en'][1]:.1%} | {scores['zh'][1]:.1%} | {scores['en'][0]:.1%} | {scores['zh'][0]:.1%} |")
    if args.reasons:
        for profile, by_kind in all_reasons.items():
            for kind in KINDS:
                if by_kind.get(kind):
                    print(f"\n`{profile}` {kind}: {dict(by_kind[kind].most_common(8))}")


if __name__ == "__main__":
    sys.exit(main())
