"""The extract job's output: records by outcome, pages skipped by reason, what the template step cut (its
counts, and the lines of a sample of sites), bytes of HTML in and of text out, the quarantined records and a
sample of the text extracted."""

from collections import Counter
from pathlib import Path

from report.config import ReportConfig
from report.documents import clipped, document
from report.layout import StageDir, read_json
from report.model import FunnelRow, Note, Section, StageView, Table, mapping, whole
from report.run import Run
from report.sample import Distributions, Smallest
from report.scan import id_hash, scanned
from report.stages.common import count, distributions, quarantine, read_note, reason_table, seconds, stream

COLUMNS = ["id", "text", "title", "url", "host", "charset", "content_type", "source"]
MAX_LINES_HELD = 1_000  # distinct lines held per site shown, whatever the output holds
# WARC records that never hold a page: not documents the funnel lost (a crawl has a request and a metadata
# record for each response, and the extract stage would read as keeping a third of its input)
NOT_DOCUMENTS = ("warcinfo", "request", "metadata")


def gather(run: Run, stage: StageDir) -> StageView:
    cfg, folder = run.cfg, stage.folder
    stats = read_json(folder / "stats.json") or {}
    templates = mapping(stats.get("templates"))
    facts = Table("Records", ["", "value"], [
        ["WARC files", stats.get("files")], ["records", stats.get("records")], ["HTML pages", stats.get("pages")],
        ["pages with text", stats.get("extracted")], ["empty after extraction", stats.get("empty_after_extraction")],
        ["template lines cut", templates.get("lines_removed")], ["pages a template was cut from",
                                                                 templates.get("pages_changed")],
        ["pages left empty by the template cut", templates.get("pages_emptied")],
        ["documents written", stats.get("written")], ["quarantined", stats.get("quarantined")],
        ["MB of HTML in", _mb(stats.get("bytes_in"))], ["MB of text out", _mb(stats.get("bytes_out"))]])
    records = count(stats, "records") or 0
    sections = [Section("Records", [facts]), _template_lines(folder / "templates", cfg),
                Section("Skipped, by reason", reason_table(stats.get("skipped") or {}, records, "Records", cfg) or
                        [Note("no record was skipped")]),
                Section("Not written", [Note("Skipped records (not HTML responses, or pages that failed a check) "
                                             "are counted by reason, not written: there is no text to show.")])]
    kept = Distributions()
    shown = ("title", "url", "charset", "source")
    sample = Smallest(cfg.kept_examples * 2, lambda row: document(row, cfg, fields=shown))
    plan = stream(folder / "docs", COLUMNS, cfg, sample, kept)
    sections.append(Section("Extracted: a sample", [*read_note(plan, "documents"), *sample.get()] or
                            [Note("no document was written")]))
    if stats.get("quarantined"):
        sections.append(quarantine(folder / "quarantine", cfg, stats["quarantined"]))
    sections.append(Section("Distributions", distributions({"extracted": kept})))
    written = count(stats, "written")
    quarantined = count(stats, "quarantined")
    skipped = mapping(stats.get("skipped"))
    into = None if count(stats, "records") is None else records - sum(count(skipped, k) or 0 for k in NOT_DOCUMENTS)
    removed = into - (written or 0) - (quarantined or 0) if written is not None and into is not None else None
    row = FunnelRow("Extract", stage.source or "", into, written, removed, quarantined,
                    whole(stats.get("bytes_out")),
                    seconds=seconds(stats.get("seconds")))
    key = f"extract/{stage.source}" if stage.source else "extract"
    return StageView(key, "Extract", str(folder.relative_to(run.out)) if folder != run.out else ".", [row], sections)


def _template_lines(folder: Path, cfg: ReportConfig) -> Section:
    """The lines the template step cut (OUT/templates/: a row per WARC file and line) of the sites of the
    smallest host hashes, each line with the pages it was cut from, summed over the files."""
    title = "Site templates: the lines cut"
    if not folder.is_dir():
        return Section(title, [Note("This output has no templates/ (an extract job of an earlier version): the "
                                    "lines cut are counted above, not shown.")])
    sites: dict[str, Counter] = {}
    plan, tables = scanned(folder, ["host", "line", "pages"], cfg.read_bytes, cfg.max_files)
    for table in tables:
        for host, line, pages in zip(*(table.column(name).to_pylist() for name in ("host", "line", "pages"))):
            if host not in sites:
                if len(sites) >= cfg.template_sites:
                    largest = max(sites, key=lambda site: (id_hash(site), site))
                    if (id_hash(host), host) >= (id_hash(largest), largest):
                        continue
                    del sites[largest]
                sites[host] = Counter()
            shown = sites[host]
            if line in shown or len(shown) < MAX_LINES_HELD:  # a site's template is tens of lines, not more
                shown[line] += pages or 0
    if not sites:
        return Section(title, [*read_note(plan, "template lines"), Note("no template line was cut")])
    blocks = [*read_note(plan, "template lines")]
    for host in sorted(sites, key=lambda site: (id_hash(site), site)):
        lines = sorted(sites[host].items(), key=lambda kv: (-kv[1], kv[0]))
        blocks.append(Table(clipped(host, cfg.field_chars), ["line", "pages it was cut from"],
                            [[clipped(line, cfg.field_chars), pages] for line, pages in lines[:cfg.template_lines]],
                            f"{len(lines) - cfg.template_lines} more lines" if len(lines) > cfg.template_lines
                            else ""))
    return Section(title, blocks)


def _mb(value) -> str | None:
    return None if whole(value) is None else f"{value / 1e6:,.1f}"
