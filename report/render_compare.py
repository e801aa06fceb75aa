"""The comparison of two runs as one HTML page: both funnels, then per stage the changes of fate with
their counts and the documents side by side."""

from pathlib import Path

from report.assets import SCRIPT, STYLE
from report.compare import StageChanges, compare
from report.config import ReportConfig
from report.gather import run_view
from report.html import element, number, page, text
from report.render import funnel, header, legend, pair


def changes_section(changes: StageChanges, names: tuple[str, str], number_: int) -> str:
    title = element("h2", text(changes.key) + element("small", text(
        f"  {changes.compared:,} documents reached this stage in both runs")))
    if not changes.whole:
        title += element("p", "Part of this stage's outputs was read (report.read_bytes, or a file was damaged): "
                              "documents that were not read in both runs are left out.", "note")
    title += "".join(element("p", text(note), "note") for note in changes.notes)
    if not changes.changes:
        return f'<section id="c{number_}">{title}{element("p", "No document fared otherwise.", "note")}</section>'
    rows = "".join(element("tr", element("td", text(c.before)) + element("td", text(c.after)) +
                           f'<td class="n">{number(c.count)}</td>') for c in changes.changes)
    head = element("tr", element("th", text(names[0])) + element("th", text(names[1])) + element("th", "documents"))
    table = element("h4", "Changes of fate") + element("table", element("thead", head) + element("tbody", rows))
    details = "".join(
        f'<details class="reason"><summary>{element("span", text(c.before + "  →  " + c.after), "name")}'
        f'{element("span", number(c.count), "count")}</summary>'
        f'{element("div", "".join(pair(p, names[0], names[1]) for p in c.pairs), "inner")}</details>'
        for c in changes.changes)
    return f'<section id="c{number_}">{title}{table}{details}</section>'


def comparison_page(out: Path, other: Path, cfg: ReportConfig) -> str:
    a, b, stages, share = compare(out, other, cfg)
    names = (f"{out.name or out} (this run)", f"{other.name or other} (the other run)")
    views = [run_view(out, cfg), run_view(other, cfg)]
    facts = {"this run": str(out), "the other run": str(other),
             "documents compared": "all" if share >= 1 else f"{100 * share:.2f}% of them, by id hash "
                                                             "(report.compare_documents)"}
    links = [("funnels", "funnels")] + [(f"c{i}", s.key) for i, s in enumerate(stages)]
    body = [header(f"tokenmill: {names[0]} against {names[1]}", facts, links), "<main>", '<section id="funnels">',
            element("h2", "Funnels")]
    for name, view in zip(names, views):
        body += [element("h3", text(name)), funnel([r for v in view.stages for r in v.funnel])]
    body += [legend(), "</section>"]
    body += [changes_section(s, names, i) for i, s in enumerate(stages)]
    if not stages:
        body.append(element("p", "The two runs have no stage in common that keeps or removes documents.", "note"))
    body.append("</main>")
    return page(f"tokenmill comparison: {out.name} against {other.name}", "".join(body), STYLE, SCRIPT)
