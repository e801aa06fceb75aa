"""The inputs the report's tests run the real jobs on: documents of the embedded sample (licenses, the
Python index pages, which hold near duplicates, the Debian FAQ in Chinese), hostile documents planted among
them (markup that would run if it were ever taken for markup: <script>, event attributes, javascript:
links, </textarea>, </script>, a </pre> in an id), a line that is not JSON, a benchmark of paragraphs of the
Debian reference planted in documents of FAQ prose, and a crawl of one site whose pages hold markup as text."""

import html
import json
from pathlib import Path

from tests.conftest import SAMPLE, write_lines
from tests.decontam_fixtures import paragraphs
from tests.web_fixtures import Response, Site, articles, write_warc

PWNED = "pwned"
# Each would change the title, open a dialog or write to the console if a browser ran it.
HOSTILE = [
    {"id": "hostile-script", "text": f"<script>document.title='{PWNED}';alert('{PWNED}');console.error('{PWNED}')"
                                     "</script> The package manager keeps a list of the packages installed on the "
                                     "system, with their versions and the files each of them owns."},
    {"id": "hostile-onerror", "text": f"<img src=x onerror=\"document.title='{PWNED}';alert(1)\"> an image"},
    {"id": "hostile-link", "text": f"<a href=\"javascript:alert('{PWNED}')\">click here</a> </textarea></script>"
                                   f"<script>alert('{PWNED}')</script><style>body{{display:none}}</style>"},
    {"id": f"<script>alert('{PWNED}')</script></code>", "text": "</pre></div><svg onload=alert(1)><iframe "
                                                                "src=javascript:alert(2)></iframe> a short one"},
    {"id": "hostile-long", "text": (f"<b onmouseover=alert('{PWNED}')>bold</b> Write to jane.doe@example.org or "
                                    "reach the mirror at 8.8.8.8 for the archive of the mailing list. ") * 12},
    {"id": "hostile-controls", "text": "nul \x00 bell \x07 escape \x1b[31m red \u202e reversed \u2028 line sep"},
]
NOT_JSON = '{"id": "broken", "text": "<script>alert(1)</script>"'  # a quarantined record: its raw bytes shown
SOURCES = ("licenses.en", "python-index-pages.en", "debian-faq.zh")
CRAWL_ARTICLES = 8  # and the page whose text is markup


def documents(folder: Path) -> Path:
    """Sample files and the hostile ones, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        (folder / f"{name}.jsonl.zst").write_bytes((SAMPLE / f"{name}.jsonl.zst").read_bytes())
    write_lines(folder / "hostile.jsonl", [*HOSTILE, NOT_JSON])
    write_lines(folder / "contaminated.jsonl", contaminated())
    return folder


def items() -> list[str]:
    """Paragraphs of the Debian reference: the benchmark's items."""
    return paragraphs(["debian-reference.en"], 25, 80)[10:60:10]


def contaminated() -> list[dict]:
    """Documents of FAQ prose, each with an item in its middle: kept by cleaning, cut by decontamination."""
    prose = paragraphs(["debian-faq.en"], 30, 120)
    around = [prose[8 * i:8 * i + 8] for i in range(len(items()))]
    return [{"id": f"contaminated-{i}", "text": "\n\n".join([*around[i][:4], item, *around[i][4:]])}
            for i, item in enumerate(items())]


def benchmark(path: Path) -> Path:
    """The items, and one that matches nothing."""
    lines = [{"id": f"ref-{i}", "text": t} for i, t in enumerate(items())]
    lines.append({"id": "<img src=x onerror=alert(1)>", "text": f"<script>alert('{PWNED}')</script> nothing"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def crawl(folder: Path) -> Path:
    """A WARC of one site's articles, one of them a page whose text is markup (escaped in its HTML)."""
    folder.mkdir(parents=True, exist_ok=True)
    site = Site("docs.example.org", "Example Docs")
    pages = [Response(f"http://docs.example.org/a/{i}", site.page(f"Article {i}", body).encode())
             for i, body in enumerate(articles(CRAWL_ARTICLES))]
    shown = html.escape(f"<script>alert('{PWNED}')</script> <img src=x onerror=alert(1)>")
    evil = site.page("Markup as text", [f"{shown} " + " ".join(articles(1)[0])])
    pages.append(Response("http://docs.example.org/markup", evil.encode()))
    return write_warc(folder / "crawl.warc.gz", pages)
