"""Real-looking web pages and the WARC files that hold them, for the extract tests.

An article is a run of real paragraphs of the embedded sample (the Debian and Python documentation,
English and Chinese); a site wraps every article in one template, as sites do: a header menu of
links, a sidebar of other articles, share buttons and the site's note and newsletter blurb inside
every <article> (where only the template step can tell them from the text), a cookie banner, a footer
of links and a copyright line. Pages are encoded as asked (UTF-8, GBK, GB18030, Big5, Shift_JIS, windows-1252,
Latin-1) and declared in the HTTP header, in a <meta> or not at all. WARC files are written by
warcio, gzipped per record as Common Crawl writes them, with the records a crawl holds beside the
pages: requests, redirects, 404s, images, revisits, metadata.
"""

import html
import re
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from tests.shard_fixtures import sample_texts

# A short Japanese passage (the sample has none) for the Shift_JIS pages.
JAPANESE = ["Debian はフリーなオペレーティングシステムで、世界中のボランティアによって開発されています。",
            "パッケージ管理システムを使うと、ソフトウェアのインストールや更新、削除を簡単に行えます。",
            "安定版は十分に試験されており、サーバーでの利用に向いています。"]


def paragraphs(names=("debian-faq.en", "debian-reference.en")) -> list[str]:
    """Paragraphs of prose from the sample: blocks of at least ten words, white space tidied."""
    found = []
    for text in sample_texts(names):
        for block in re.split(r"\n\s*\n", text):
            block = " ".join(block.split())
            if len(block.split()) >= 10 or (len(block) >= 40 and re.search(r"[\u4e00-\u9fff]", block)):
                found.append(block)
    return found


@dataclass(frozen=True)
class Site:
    host: str
    name: str
    menu: tuple[str, ...] = ("Home", "News", "Downloads", "Documentation", "Support", "About us")
    related: tuple[str, ...] = ("Installing packages from backports", "Why the kernel panics at boot",
                                "Choosing a mirror near you", "What the release team does")

    def template_lines(self) -> list[str]:
        """The lines of the template that a single-page extractor may keep (a site's note and blurb inside
        every article, and its related links): what the template step removes."""
        return [f"Subscribe to the {self.name} newsletter for a weekly digest of new articles and releases.",
                f"{self.name} is written by volunteers. Every page may be copied under the terms of the GPL.",
                *self.related]

    def page(self, title: str, body: list[str], lang: str = "en") -> str:
        """The HTML of one article of the site."""
        menu = "".join(f'<li><a href="/{m.lower().replace(" ", "-")}">{m}</a></li>' for m in self.menu)
        related = "".join(f'<p class="related-item"><a href="/a/{i}">{html.escape(r)}</a></p>'
                          for i, r in enumerate(self.related))
        article = "".join(f"<p>{html.escape(p)}</p>" for p in body)
        blurb, note = (html.escape(line) for line in self.template_lines()[:2])
        return (f'<!DOCTYPE html><html lang="{lang}"><head><title>{html.escape(title)} | {self.name}</title></head>'
                f'<body><div id="cookie-banner">We use cookies to improve your experience. <button>Accept</button>'
                f'</div><header><a href="/">{self.name}</a><nav><ul>{menu}</ul></nav></header>'
                f'<div class="wrapper"><main><article><h1>{html.escape(title)}</h1>{article}'
                f'<div class="share">Share: <a href="#">Twitter</a> <a href="#">Facebook</a> <a href="#">Mail</a></div>'
                f'<div class="promo"><p>{blurb}</p></div><div class="site-note"><p>{note}</p></div></article></main>'
                f'<div class="sidebar"><h3>Related articles</h3>{related}</div></div>'
                f'<footer><a href="/imprint">Imprint</a> <a href="/privacy">Privacy</a> (c) 2026 {self.name}</footer>'
                f'</body></html>')


def articles(count: int, size: int = 4, names=("debian-faq.en", "debian-reference.en")) -> list[list[str]]:
    """`count` articles of `size` consecutive paragraphs each, none shared."""
    found = paragraphs(names)
    assert len(found) >= count * size, "the sample has too few paragraphs"
    return [found[i * size:(i + 1) * size] for i in range(count)]


@dataclass
class Response:
    url: str
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: str = "200 OK"


def encoded(page: str, encoding: str, declare: str) -> tuple[bytes, str]:
    """(the page's bytes in `encoding`, the Content-Type header): declared in the "header", in a "meta", or
    "none" at all."""
    if declare == "meta":
        page = page.replace("<head>", f'<head><meta http-equiv="Content-Type" content="text/html; charset={encoding}">')
    return page.encode(encoding), f"text/html; charset={encoding}" if declare == "header" else "text/html"


def write_warc(path: Path, responses: list[Response], gzip: bool = True, crawl_records: bool = True) -> Path:
    """The responses as a WARC file (warcio), each after its request record, with a warcinfo first; with
    `crawl_records`, also a redirect, a 404, an image, a revisit and a metadata record."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=gzip)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "tokenmill tests"}))
        extra = [Response("http://example.org/old", b"", "text/html", "301 Moved Permanently"),
                 Response("http://example.org/missing", b"<html>Not found</html>", "text/html", "404 Not Found"),
                 Response("http://example.org/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")]
        for response in responses + (extra if crawl_records else []):
            request = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.org")], is_http_request=True)
            writer.write_record(writer.create_warc_record(response.url, "request", http_headers=request,
                                                          payload=BytesIO(b"")))
            headers = StatusAndHeaders(response.status, [("Content-Type", response.content_type)],
                                       protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(response.url, "response", payload=BytesIO(response.body),
                                                          http_headers=headers))
        if crawl_records:
            writer.write_record(writer.create_warc_record("http://example.org/again", "revisit",
                                                          payload=BytesIO(b"")))
            writer.write_record(writer.create_warc_record("http://example.org/", "metadata",
                                                          payload=BytesIO(b"fetchTimeMs: 12\r\n"),
                                                          warc_content_type="application/warc-fields"))
    return path
