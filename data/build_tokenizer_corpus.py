"""Assemble the large real corpus that `benchmarks/bench_tokenizer.py` trains the tokenizer on
(about 300 MB; not shipped: it is rebuilt from Debian packages and Python sources in minutes).

    mkdir -p /tmp/corpus/debs && cd /tmp/corpus/debs && apt-get download linux-doc-6.1 python3.11-doc \
        debian-handbook gnome-user-docs manpages manpages-dev manpages-zh manpages-fr manpages-de \
        manpages-ja manpages-es debian-edu-doc-zh-cn kicad-doc-zh linuxcnc-doc-zh-cn debian-reference-en \
        debian-reference-zh-cn debian-reference-zh-tw debian-reference-fr debian-reference-de \
        debian-reference-ja debian-reference-es
    for f in *.deb; do dpkg -x "$f" ../root; done
    python data/build_tokenizer_corpus.py /tmp/corpus/root /tmp/corpus/docs [PYTHON_SOURCE_DIR ...]

Every file becomes one document (cut at a paragraph past 100,000 characters): HTML and Mallard
pages by their visible text, man pages with their roff requests removed, reStructuredText and plain
text as they are, Python sources as they are. Identical files (the same page in two packages) are
written once. Output: JSON Lines with zstd, `id` = the file's path, `text`, `source` = its kind.
"""

import gzip
import hashlib
import json
import re
import sys
from pathlib import Path

import zstandard
from build_sample import SectionSplitter, tidy

MAX_DOC_CHARS = 100_000
MAX_CODE_BYTES = 120_000_000  # Python sources are plentiful; keep the corpus mostly prose
ROFF_FONT = re.compile(r"\\f[BIRP]|\\f\(..|\\s[+-]?\d|\\&|\\\(..|\\\*.")


def read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def kind_of(path: Path) -> str | None:
    name = path.name.removesuffix(".gz")
    if "/man/" in str(path):
        return "man"
    if name.endswith((".html", ".htm", ".page", ".xhtml")):
        return "html"
    if name.endswith((".rst", ".txt", ".md")) or (path.parent.name == "Documentation" and "." not in name):
        return "text"
    if name.endswith(".py"):
        return "python"
    return None


def visible_text(markup: str) -> str:
    splitter = SectionSplitter()
    splitter.feed(markup)
    return tidy("\n".join(splitter.result()))


# (in this order: a backslash that \e leaves must not start another escape)
ROFF_CHARACTERS = {"\\-": "-", "\\ ": " ", "\\~": " ", "\\(em": "\u2014", "\\(en": "\u2013", "\\(aq": "'",
                   "\\(dq": '"', "\\(bu": "\u2022", "\\.": ".", "\\|": "", "\\^": "", "\\c": "", "\\e": "\\"}


def man_text(roff: str) -> str:
    """A man page's text: roff requests dropped, escapes for characters turned into them, font changes removed."""
    lines = []
    for line in roff.splitlines():
        if line.startswith((".", "'")):
            continue
        for escape, character in ROFF_CHARACTERS.items():
            line = line.replace(escape, character)
        lines.append(ROFF_FONT.sub("", line))
    return tidy("\n".join(lines))


def cut(text: str) -> list[str]:
    parts = []
    while len(text) > MAX_DOC_CHARS:
        at = text.rfind("\n\n", 0, MAX_DOC_CHARS)
        at = at if at > MAX_DOC_CHARS // 2 else MAX_DOC_CHARS
        parts.append(text[:at])
        text = text[at:].lstrip("\n")
    return parts + [text] if text.strip() else parts


def documents(roots: list[Path]):
    seen, code_bytes = set(), 0
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            kind = kind_of(path)
            if kind is None or "/linux-doc-6.1/html/" in str(path):  # the kernel's HTML repeats its .rst
                continue
            raw = read_bytes(path)
            digest = hashlib.blake2b(raw, digest_size=16).digest()
            if digest in seen:
                continue
            seen.add(digest)
            text = raw.decode("utf-8", errors="replace")
            if kind == "html":
                text = visible_text(text)
            elif kind == "man":
                text = man_text(text)
            elif kind == "python":
                if code_bytes > MAX_CODE_BYTES:
                    continue
                code_bytes += len(raw)
            for i, part in enumerate(cut(text)):
                yield {"id": f"{path.relative_to(root)}#{i}", "text": part, "source": kind}


def main(roots: list[str], out: str) -> None:
    Path(out).mkdir(parents=True, exist_ok=True)
    files, total, n = {}, 0, 0
    for doc in documents([Path(r) for r in roots]):
        if doc["source"] not in files:
            files[doc["source"]] = zstandard.open(Path(out) / f"{doc['source']}.jsonl.zst", "wt", encoding="utf-8")
        files[doc["source"]].write(json.dumps(doc, ensure_ascii=False) + "\n")
        total, n = total + len(doc["text"].encode()), n + 1
    for f in files.values():
        f.close()
    print(f"{n} documents, {total / 1e6:.1f} MB of text in {out}")


if __name__ == "__main__":
    main(sys.argv[1:2] + sys.argv[3:], sys.argv[2])
