"""Rebuild the embedded sample corpus from Debian packages (run once by a maintainer, not by jobs).

    mkdir /tmp/debs && cd /tmp/debs && apt-get download <packages listed in data/sample/README.md>
    for f in *.deb; do dpkg -x "$f" root; done
    python data/build_sample.py /tmp/debs/root data/sample

Documents are sections of real documentation pages, cut at headings so their lengths look like web
pages. Index and navigation pages are kept on purpose: they are the natural low-quality pages of the
sample. The same FAQ comes in its HTML and its plain-text rendering, which gives natural near
duplicates; the license texts give exact and near duplicates.
"""

import gzip
import html.parser
import json
import re
import sys
from pathlib import Path

import zstandard

MIN_DOC_CHARS = 400    # shorter sections are merged into the next one
MAX_DOC_CHARS = 40_000  # longer ones are cut at a paragraph boundary

HEADING_TAGS = {"h1", "h2", "h3"}
SKIP_TAGS = {"script", "style"}
BLOCK_TAGS = {"p", "div", "li", "tr", "pre", "br", "dt", "dd", "table", "ul", "ol", "h4", "h5", "h6", "title"}


class SectionSplitter(html.parser.HTMLParser):
    """Collects the visible text of an HTML page, starting a new section at each h1-h3."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections, self.current, self.skip = [], [], 0

    def handle_starttag(self, tag, _attrs):
        if tag in SKIP_TAGS:
            self.skip += 1
        elif tag in HEADING_TAGS:
            self.sections.append("".join(self.current))
            self.current = ["\n"]
        elif tag in BLOCK_TAGS:
            self.current.append("\n")

    def handle_endtag(self, tag):
        if tag in SKIP_TAGS:
            self.skip -= 1
        elif tag in HEADING_TAGS or tag in BLOCK_TAGS:
            self.current.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.current.append(data)

    def result(self):
        return self.sections + ["".join(self.current)]


def tidy(text):
    lines = [re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def merge_sections(sections):
    """Merges short sections forward and cuts very long ones, so documents are web-page sized."""
    out, pending = [], ""
    for section in sections:
        pending = f"{pending}\n\n{section}".strip() if pending else section.strip()
        if len(pending) < MIN_DOC_CHARS:
            continue
        while len(pending) > MAX_DOC_CHARS:
            cut = pending.rfind("\n\n", 0, MAX_DOC_CHARS)
            cut = cut if cut > MIN_DOC_CHARS else MAX_DOC_CHARS
            out.append(pending[:cut].strip())
            pending = pending[cut:].strip()
        out.append(pending)
        pending = ""
    if pending:
        out.append(pending)
    return [s for s in out if s]


def html_docs(path):
    parser = SectionSplitter()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return merge_sections(tidy(s) for s in parser.result())


RST_TITLE = re.compile(r"\n(?=[^\n]+\n(?:={3,}|-{3,}|\*{3,})\n)")


def rst_docs(path):
    return merge_sections(RST_TITLE.split(path.read_text(encoding="utf-8")))


def text_docs(path, chapter=re.compile(r"\n(?=\d+\. [^\n]+\n-{3,}|\d+\.\d+\. [^\n]+\n)")):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return merge_sections(chapter.split(f.read()))


def fortune_docs(path):
    # One poem per document: these are short on purpose (the cleaner must not mistake them for junk
    # because they are short, and the dedup must compare them rather than drop them).
    return [p.strip() for p in path.read_text(encoding="utf-8").split("\n%\n") if p.strip()]


def plain_doc(path):
    return [path.read_text(encoding="utf-8", errors="replace")]


PYTHON_DOCS_BYTES = 5_000_000  # keeps the sample small enough for CI and at least 20% Chinese


def python_sources(folder):
    """The tutorial, FAQ, HOWTOs and language reference, then library pages until the byte budget."""
    files = [p for part in ("tutorial", "faq", "howto", "reference") for p in sorted((folder / part).glob("*.rst.txt"))]
    files += sorted((folder / "library").glob("*.rst.txt"))
    chosen, total = [], 0
    for path in files:
        total += path.stat().st_size
        if total > PYTHON_DOCS_BYTES:
            break
        chosen.append(path)
    return chosen


def sources(root):
    """(output file, license, reader, files) for every part of the sample."""
    doc, share = root / "usr/share/doc", root / "usr/share"
    python = doc / "python3.11/html"
    handbook = doc / "debian-handbook/html"
    reference = share / "debian-reference"
    return [
        ("python-docs.en", "PSF-2.0", rst_docs, python_sources(python / "_sources")),
        ("python-index-pages.en", "PSF-2.0", html_docs,
         sorted(python.glob("genindex-*.html"))[:6] + [python / "py-modindex.html"]),
        ("debian-handbook.en", "GPL-2.0+ OR CC-BY-SA-3.0", html_docs, sorted((handbook / "en-US").glob("*.html"))),
        ("debian-handbook.zh", "GPL-2.0+ OR CC-BY-SA-3.0", html_docs,
         sorted((handbook / "zh-CN").glob("*.html")) + sorted((handbook / "zh-TW").glob("*.html"))),
        ("debian-reference.en", "GPL-2.0+", html_docs, sorted(reference.glob("*.en.html"))),
        ("debian-reference.zh", "GPL-2.0+", html_docs, sorted(reference.glob("*.zh-cn.html"))),
        ("debian-faq.en", "GPL-2.0+", text_docs, [doc / "debian/FAQ/debian-faq.en.txt.gz"]),
        ("debian-faq.zh", "GPL-2.0+", text_docs, [doc / "debian/FAQ/debian-faq.zh-cn.txt.gz"]),
        ("debian-faq-html.zh", "GPL-2.0+", html_docs, sorted((doc / "debian/FAQ/zh-cn").glob("*.html"))),
        ("maint-guide.zh", "MIT", html_docs, sorted((doc / "maint-guide-zh-cn/html").glob("*.html"))),
        ("classical-poetry.zh", "GPL-3.0+", fortune_docs,
         [share / "games/fortunes/tang300.u8", share / "games/fortunes/song100.u8"]),
        ("licenses.en", "verbatim copying permitted", plain_doc,
         sorted(p for p in Path("/usr/share/common-licenses").iterdir() if p.is_file())),
    ]


def main(root, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, license_name, reader, files in sources(root):
        rows = 0
        with zstandard.open(out_dir / f"{name}.jsonl.zst", "wt", encoding="utf-8",
                            cctx=zstandard.ZstdCompressor(level=19)) as out:
            for path in files:
                for i, text in enumerate(reader(path)):
                    record = {"id": f"{name}/{path.parent.name}/{path.name}#{i}", "text": text,
                              "url": f"file:///{path.relative_to(root) if path.is_relative_to(root) else path}",
                              "license": license_name}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    rows += 1
        print(f"{name}: {len(files)} files, {rows} documents")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
