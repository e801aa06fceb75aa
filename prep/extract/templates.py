"""Site templates, page by page: the keys of a page's lines, and its text with the template's lines cut.

A line is a block of the extracted text (prep/extract/html_text.py joins blocks with a blank line). Its
key is a 64-bit hash of the page's site (host) and the line lowercased with its white space collapsed,
so the same line on two sites has two keys and counting a key counts one site's pages. The cross-page
step (spark_stages/extract.py) counts, per key, the pages that hold it, and calls a key on enough of its
site's pages the site's template; each page is then cut where it was written, in its own order.
"""

import xxhash

BLOCK_SEPARATOR = "\n\n"


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value  # Arrow's and Spark's int64


def site_key(host: str) -> int:
    return _signed(xxhash.xxh3_64_intdigest(host.encode()))


def lines(text: str) -> list[str]:
    """The page's lines: its blocks that hold more than white space."""
    return [line for line in text.split(BLOCK_SEPARATOR) if line.strip()]


def line_keys(host: str, text: str) -> list[int]:
    """A key per line of the page (lines(text)), in order."""
    prefix = host.encode() + b"\0"
    return [_signed(xxhash.xxh3_64_intdigest(prefix + " ".join(line.lower().split()).encode()))
            for line in lines(text)]


def cut(text: str, keys: list[int], template: set[int]) -> tuple[str, list[tuple[int, str]]]:
    """(the page's text without its template lines, the (key, line) of each line cut, in order); the text as
    it was when nothing is cut."""
    page_lines = lines(text)
    kept = [line for line, key in zip(page_lines, keys, strict=True) if key not in template]
    if len(kept) == len(page_lines):
        return text, []
    return BLOCK_SEPARATOR.join(kept), [(key, line) for line, key in zip(page_lines, keys) if key in template]
