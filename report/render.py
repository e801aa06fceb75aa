"""A RunView as one HTML page: the run's facts, the funnel, then each stage's sections, then the settings.
Every string from the outputs goes through report/html.text; marks split a document's text into escaped
pieces, each inside a <mark> of a fixed class."""

from report import svg
from report.assets import SCRIPT, STYLE
from report.html import element, number, page, text
from report.model import (
    Bars,
    Cluster,
    Document,
    FunnelRow,
    Histogram,
    Match,
    Note,
    Pair,
    Reason,
    RunView,
    Section,
    StageView,
    Table,
    Text,
)

MARK_ORDER = ("span", "pii", "changed", "window")  # where marks overlap, the first in this order shows
MARK_NAMES = {"span": "matched span", "window": "cut with it (window)", "pii": "PII replacement",
              "changed": "changed"}
FUNNEL_HEADER = ["stage", "source", "in", "kept", "removed", "quarantined", "kept %", "MB of text kept", "tokens",
                 "seconds"]


def marked(value: str, marks) -> str:
    """`value` escaped, the stretches of `marks` inside <mark class="KIND">."""
    if not marks:
        return text(value)
    cuts = sorted({0, len(value), *(max(0, min(len(value), p)) for m in marks for p in (m.start, m.end))})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        covering = [m for m in marks if m.start <= a and b <= m.end]
        piece = text(value[a:b])
        if covering:
            best = min(covering, key=lambda m: MARK_ORDER.index(m.kind) if m.kind in MARK_ORDER else 99)
            kind = best.kind if best.kind in MARK_ORDER else "changed"
            out.append(f'<mark class="{kind}">{piece}</mark>')
        else:
            out.append(piece)
    return "".join(out)


def document(doc: Document | None, heading: str = "") -> str:
    if doc is None:
        return element("div", element("div", text(heading or "—"), "head"), "doc")
    fields = "".join(f'<span class="field"><b>{text(k)}</b> {text(v)}</span>' for k, v in doc.fields.items())
    head = (text(heading) + " " if heading else "") + element("code", text(doc.id), "doc-id") + fields
    note = element("div", text(doc.note), "note") if doc.note else ""
    body = element("pre", marked(doc.text, doc.marks), "text") if doc.text else ""
    return element("div", element("div", head, "head") + body + note, "doc")


def table(t: Table) -> str:
    head = "".join(element("th", text(h)) for h in t.header)
    rows = "".join(element("tr", "".join(f'<td class="n">{number(c)}</td>' if isinstance(c, (int, float)) and not
                                         isinstance(c, bool) else element("td", number(c)) for c in row))
                   for row in t.rows)
    note = element("div", text(t.note), "note") if t.note else ""
    title = element("h4", text(t.title)) if t.title else ""
    return title + element("table", element("thead", element("tr", head)) + element("tbody", rows)) + note


def reason(r: Reason) -> str:
    summary = (element("span", text(r.name), "name") + element("span", number(r.count), "count") +
               element("span", f"{100 * r.share:.2f}%", "share") + svg.share_bar(r.share))
    inner = (element("div", text(r.note), "note") if r.note else "") + "".join(map(document, r.documents))
    if not r.documents and not r.note:
        inner = element("div", "no example read", "note")
    return f'<details class="reason"><summary>{summary}</summary>{element("div", inner, "inner")}</details>'


def folded(summary: str, inner: str, cls: str, open_: bool = False) -> str:
    """A <details> block: `summary` and `inner` are HTML already."""
    return f'<details class="{cls}"{" open" if open_ else ""}><summary>{summary}</summary>{inner}</details>'


def cluster(c: Cluster, open_: bool = False) -> str:
    members = []
    for doc, similarity, exact in c.members:
        label = "removed" + (", an exact duplicate (the same text once normalized)" if exact else
                             f", a near duplicate, similarity {similarity:.2f} to the survivor"
                             if similarity is not None else "")
        members.append(document(doc, label))
    note = element("div", text(c.note), "note") if c.note else ""
    inner = element("div", element("div", document(c.survivor, "survivor (kept)")) +
                    element("div", "".join(members) + note), "pair")
    return folded(text(c.title), inner, "cluster", open_)


def match(m: Match, open_: bool = False) -> str:
    summary = text(f"{m.benchmark} · item {m.item}") + element("small", text(
        f" · {m.found_in:,} span{'s' if m.found_in != 1 else ''} in the documents"))
    item = (document(Document(m.item, m.item_text), "benchmark item") if m.item_text is not None else
            element("div", "the item's text is not at hand (the benchmark file named in the settings)", "note"))
    spans = "".join(document(d, "in the document") for d in m.spans)
    return folded(summary, element("div", element("div", item) + element("div", spans), "pair"), "item", open_)


def pair(p: Pair, left: str = "this run", right: str = "the other run") -> str:
    return element("div", element("div", element("h4", text(left)) + document(p.left)) +
                   element("div", element("h4", text(right)) + document(p.right)), "pair")


def block(b) -> str:
    if isinstance(b, Table):
        return table(b)
    if isinstance(b, Bars):
        return element("h4", text(b.title)) + svg.bars(b.values, b.unit) + (
            element("div", text(b.note), "note") if b.note else "")
    if isinstance(b, Histogram):
        counts = Table("", ["", *b.labels], [[name, *values] for name, values in b.series.items()])
        return (element("h4", text(b.title)) + svg.histogram(b.labels, b.series) +
                (element("div", text(b.note), "note") if b.note else "") + table(counts))
    if isinstance(b, Reason):
        return reason(b)
    if isinstance(b, Cluster):
        return cluster(b)
    if isinstance(b, Match):
        return match(b)
    if isinstance(b, Pair):
        return pair(b)
    if isinstance(b, Document):
        return document(b)
    if isinstance(b, Text):
        return element("h4", text(b.title)) + element("pre", text(b.text), "settings")
    if isinstance(b, Note):
        return element("p", text(b.text), "note")
    raise TypeError(f"no rendering for {type(b).__name__}")


def section(s: Section) -> str:
    first = next((b for b in s.blocks if isinstance(b, (Cluster, Match))), None)
    return element("h3", text(s.title)) + "".join(cluster(b, True) if b is first and isinstance(b, Cluster) else
                                                  match(b, True) if b is first else block(b) for b in s.blocks)


def funnel(rows: list[FunnelRow]) -> str:
    def cells(r: FunnelRow) -> list:
        share = f"{100 * r.kept / r.input:.1f}%" if r.input and r.kept is not None else None
        mb = None if r.text_bytes is None else ("" if r.bytes_exact else "≈") + f"{r.text_bytes / 1e6:,.2f}"
        tokens = r.tokens if r.tokens is None or r.tokens_exact else f"≈{r.tokens:,}"
        return [r.stage, r.source or "", r.input, r.kept, r.removed, r.quarantined, share, mb, tokens,
                None if r.seconds is None else round(r.seconds, 1)]

    flowing = [r for r in rows if r.input is not None]
    chart = svg.bars({f"{r.stage}{' ' + r.source if r.source else ''}": r.kept or 0 for r in flowing}, "documents")
    return (table(Table("Documents, text and tokens through each stage", FUNNEL_HEADER, [cells(r) for r in rows],
                        note="Extract's input: the WARC records that can hold a page (requests, metadata and "
                             "warcinfo records are counted in its section, not here); MB of text: UTF-8 bytes of "
                             "the kept documents' text (≈: estimated from the share read); tokens: the real "
                             "tokens in the shards, and before them (≈) the text's bytes over the tokenizer's "
                             "bytes per token on held-out documents")) +
            (element("h4", "Documents kept, by stage") + chart if flowing else ""))


def legend() -> str:
    return element("div", "Marks in the text: " + "".join(f'<mark class="{k}">{text(v)}</mark>'
                                                           for k, v in MARK_NAMES.items()), "note legend")


def stage(view: StageView, number_: int) -> str:
    title = element("h2", text(view.title) + (element("small", text(f"  {view.folder}")) if view.folder != "." else ""))
    return f'<section id="s{number_}">{title}{"".join(section(s) for s in view.sections)}</section>'


def header(title: str, facts: dict[str, str], links: list[tuple[str, str]]) -> str:
    spans = "".join(element("span", element("b", text(k)) + " " + text(v)) for k, v in facts.items())
    nav = "".join(f'<a href="#{anchor}">{text(name)}</a>' for anchor, name in links)
    buttons = element("span", '<button id="expand-all" type="button">expand all</button>'
                      '<button id="collapse-all" type="button">collapse all</button>', "buttons")
    return element("header", element("h1", text(title)) + element("div", spans, "facts")) + element("nav", buttons +
                                                                                                   nav)


def report_page(view: RunView) -> str:
    links = [("funnel", "funnel")] + [(f"s{i}", v.title + (f" {v.key.split('/', 1)[1]}" if "/" in v.key else ""))
                                      for i, v in enumerate(view.stages)] + [("settings", "settings")]
    body = [header(f"tokenmill report: {view.folder} ({view.job})", view.facts, links), "<main>",
            '<section id="funnel">', element("h2", "Funnel"),
            funnel([r for v in view.stages for r in v.funnel]), legend(), "</section>"]
    body += [stage(v, i) for i, v in enumerate(view.stages)]
    settings = (element("pre", text(view.settings), "settings") if view.settings else
                element("p", "The settings of this run were not recorded (OUT/settings.yaml is written by every "
                             "job since the report was added).", "note"))
    body += ['<section id="settings">', element("h2", "Settings that ran"), settings, "</section>", "</main>"]
    return page(f"tokenmill report: {view.folder}", "".join(body), STYLE, SCRIPT)
