"""The main text of an HTML page: the article, not the page around it.

resiliparse parses the page (lexbor, in C) and drops what is never content (<nav>, <aside>, <footer>,
<form>); list items become paragraphs first (resiliparse's main-content pass drops every list, taking
it for a menu); that pass renders the rest as blocks, with the links marked; then, block by
block: a short block that is mostly link text is navigation (menus, related links, tag lists), and a
short block that says what boilerplate says (newsletter, share, related articles, copyright, cookie,
photo credits, dates and bylines, in English, German, French and Spanish) goes; finally the text is
trimmed to the stretch from its first to its last block of prose (a long line, or a sentence of eight
words), where the page's head and tail (titles of other articles, footers) fall outside. Paragraphs,
headings, list items and table rows come out as blocks separated by blank lines.

Measured against trafilatura, resiliparse alone and readability on trafilatura's own evaluation
pages (benchmarks/bench_extract.py; docs/extract.md).
"""

import html
import re

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

NEVER_CONTENT = ("nav", "aside", "footer", "form")
LIST_TAGS = re.compile(r"<(/?)(?:li|ul|ol|dl|dt|dd)\b", re.I)
LINKED_BLOCK = 300  # a block shorter than this that is mostly links is navigation
TAG = re.compile(r"<[^>]+>")
LINK = re.compile(r"<a\b[^>]*>(.*?)</a>", re.S)
BLOCK = re.compile(r"</?(?:p|h[1-6]|li|ul|ol|pre|br|div|tr|table|blockquote)\b[^>]*>")
SENTENCE_END = re.compile(r"[.!?。！？…\"”»)]\s*$")
BOILERPLATE = re.compile(
    r"(newsletter|subscri|abonn|\bshare\b|teilen|related|weitere (artikel|beiträge|themen)|mehr zu|lesen sie auch|"
    r"read more|read also|also like|might like|©|copyright|all rights reserved|alle rechte|cookie|impressum|"
    r"datenschutz|privacy|kommentar|\bcomments?\b|réactions|anzeige|advertisement|werbung|follow us|folgen sie|"
    r"^tags?:|kategorie|categor|^posted|veröffentlicht|^foto|^photo|^bild|^image|^quelle|^source|"
    r"^von |^by |download|\bapps?\b|login|log in|sign up|registrier|lea más|le puede interesar|leer más|"
    r"plus d'|à lire|voir aussi|explore further|^\d{1,2}\.\s?\d{1,2}\.\s?\d{2,4}|^\w+, \d{1,2}\. \w+ \d{4}|"
    r"^(january|february|march|april|may|june|july|august|september|october|november|december) \d)", re.I)


def _blocks(tree: HTMLTree) -> list[tuple[str, float]]:
    """(text, share of it in links) of each block (paragraph, heading, list item, table row) of the page's
    main content, in order."""
    marked = extract_plain_text(tree, preserve_formatting="minimal_html", main_content=True, comments=False,
                                links=True, alt_texts=False, form_fields=False, noscript=False, list_bullets=False)
    blocks = []
    for block in (line for part in BLOCK.split(marked) for line in part.split("\n")):
        text = html.unescape(TAG.sub("", block)).strip()
        if text:
            linked = sum(len(html.unescape(TAG.sub("", link))) for link in LINK.findall(block))
            blocks.append((text, linked / len(text)))
    return blocks


def _is_prose(text: str) -> bool:
    return len(text) >= 80 or (len(text.split()) >= 8 and SENTENCE_END.search(text) is not None)


def main_text(page: str, max_link_share: float = 0.3, short_block: int = 120) -> str:
    """The main text of a decoded HTML page ("" when it has none)."""
    # resiliparse's main-content pass drops lists (it takes them for menus): their items become paragraphs
    # and face the link-density and boilerplate rules like any other block
    tree = HTMLTree.parse(LIST_TAGS.sub(r"<\1p", page))
    if tree.body is None:
        return ""
    for tag in NEVER_CONTENT:
        for node in tree.body.query_selector_all(tag):
            if node.parent is not None:
                node.parent.remove_child(node)
    kept = [text for text, links in _blocks(tree)
            if not (len(text) < LINKED_BLOCK and links > max_link_share) and not (len(text) < short_block
                                                                          and BOILERPLATE.search(text))]
    prose = [i for i, text in enumerate(kept) if _is_prose(text)]
    if prose:
        kept = kept[prose[0]:prose[-1] + 1]
    return "\n\n".join(kept)
