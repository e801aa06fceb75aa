"""The extract job's output: records by outcome, pages skipped by reason, what the template step cut,
bytes of HTML in and of text out, the quarantined records and a sample of the text extracted."""

from report.documents import document
from report.layout import StageDir, read_json
from report.model import FunnelRow, Note, Section, StageView, Table
from report.run import Run
from report.sample import Distributions, Smallest
from report.stages.common import count, distributions, quarantine, read_note, reason_table, seconds, stream

COLUMNS = ["id", "text", "url", "host", "charset", "content_type", "source"]


def gather(run: Run, stage: StageDir) -> StageView:
    cfg, folder = run.cfg, stage.folder
    stats = read_json(folder / "stats.json") or {}
    templates = stats.get("templates") or {}
    facts = Table("Records", ["", "value"], [
        ["WARC files", stats.get("files")], ["records", stats.get("records")], ["HTML pages", stats.get("pages")],
        ["pages with text", stats.get("extracted")], ["empty after extraction", stats.get("empty_after_extraction")],
        ["template lines cut", templates.get("lines_removed")], ["pages a template was cut from",
                                                                 templates.get("pages_changed")],
        ["pages left empty by the template cut", templates.get("pages_emptied")],
        ["documents written", stats.get("written")], ["quarantined", stats.get("quarantined")],
        ["MB of HTML in", _mb(stats.get("bytes_in"))], ["MB of text out", _mb(stats.get("bytes_out"))]])
    records = count(stats, "records") or 0
    sections = [Section("Records", [facts, Note("The lines the template step cut are counted, not written: the "
                                                "pages are shown as they were kept.")]),
                Section("Skipped, by reason", reason_table(stats.get("skipped") or {}, records, "Records", cfg) or
                        [Note("no record was skipped")]),
                Section("Not written", [Note("Skipped records (not HTML responses, or pages that failed a check) "
                                             "are counted by reason, not written: there is no text to show.")])]
    kept = Distributions()
    sample = Smallest(cfg.kept_examples * 2, lambda row: document(row, cfg, fields=("url", "charset", "source")))
    plan = stream(folder / "docs", COLUMNS, cfg, sample, kept)
    sections.append(Section("Extracted: a sample", [*read_note(plan, "documents"), *sample.get()] or
                            [Note("no document was written")]))
    if stats.get("quarantined"):
        sections.append(quarantine(folder / "quarantine", cfg, stats["quarantined"]))
    sections.append(Section("Distributions", distributions({"extracted": kept})))
    written = count(stats, "written")
    quarantined = count(stats, "quarantined")
    removed = records - (written or 0) - (quarantined or 0) if written is not None else None
    row = FunnelRow("Extract", stage.source or "", stats.get("records"), written, removed, quarantined,
                    stats.get("bytes_out") if isinstance(stats.get("bytes_out"), int) else None,
                    seconds=seconds(stats.get("seconds")))
    key = f"extract/{stage.source}" if stage.source else "extract"
    return StageView(key, "Extract", str(folder.relative_to(run.out)) if folder != run.out else ".", [row], sections)


def _mb(value) -> str | None:
    return f"{value / 1e6:,.1f}" if isinstance(value, int) else None
