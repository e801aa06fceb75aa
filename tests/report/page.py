"""A report read back as a browser's parser reads it (html.parser): its elements and attributes, and the text
inside the elements of each class, unescaped."""

from collections import defaultdict
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "rect", "line", "circle", "path"}


@dataclass
class Page:
    tags: list[tuple[str, dict]] = field(default_factory=list)  # every start tag, with its attributes
    by_class: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # class -> texts inside
    text: str = ""  # all text, unescaped


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.page, self.open, self.parts = Page(), [], []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.page.tags.append((tag, attributes))
        if tag not in VOID:
            self.open.append((tag, attributes.get("class"), len(self.parts)))

    def handle_startendtag(self, tag, attrs):
        self.page.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        while self.open:
            name, cls, start = self.open.pop()
            if cls:
                self.page.by_class[cls].append("".join(self.parts[start:]))
            if name == tag:
                break

    def handle_data(self, data):
        self.parts.append(data)


def read_page(html: str) -> Page:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    reader.page.text = "".join(reader.parts)
    return reader.page


def table_rows(html: str, caption: str) -> list[list[str]]:
    """The body rows of the table after the <h4> `caption`, as cell texts."""
    start = html.index(f"<h4>{caption}</h4>")
    body = html[html.index("<tbody>", start):html.index("</tbody>", start)]
    rows = []
    for row in body.split("<tr>")[1:]:
        cells = []
        for cell in row.split("</td>")[:-1]:
            reader = _Reader()
            reader.feed(cell.split(">", 1)[1] if cell.startswith("<td") else cell)
            cells.append("".join(reader.parts))
        rows.append(cells)
    return rows
