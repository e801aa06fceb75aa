"""The clean job's output (and the pipeline's quality step, which writes the same kind): every reason a
document was rejected with examples, a sample of the kept ones with the PII replacements marked, what
normalization changed in a sample of the documents, the quarantined records, and the distributions of the
kept and the rejected side by side."""

import re
from pathlib import Path

from prep.normalize import MAX_CHANGES
from prep.pii import PiiConfig
from report.config import ReportConfig
from report.documents import clipped, document, metadata_fields, replacement_marks
from report.layout import StageDir, read_json
from report.model import Document, FunnelRow, Note, Section, StageView, Table
from report.run import Run
from report.sample import Distributions, Smallest
from report.stages.common import (
    DOCUMENT_COLUMNS,
    classifier_columns,
    count,
    distributions,
    quarantine,
    read_note,
    reason_sample,
    reasons,
    seconds,
    stream,
)

TITLES = {"clean": "Clean", "quality": "Quality classifier"}
RULES_REJECTED = "rules_rejected"  # the quality step's scores of what the clean rules rejected (spark_stages/score.py)


def gather(run: Run, stage: StageDir) -> StageView:
    cfg, folder = run.cfg, stage.folder
    stats = read_json(folder / "stats.json") or {}
    pii = _replacements(run, stage)

    def shown(row: dict) -> Document:
        return document(row, cfg, marks=replacement_marks(row.get("text") or "", pii),
                        extra=metadata_fields(row, cfg))

    extra = classifier_columns(folder / "docs")
    kept, removed = Distributions(), Distributions()
    kept_sample = Smallest(cfg.kept_examples, shown)
    by_reason = reason_sample(stats.get("rejected_by_reason"), cfg, shown)
    kept_plan = stream(folder / "docs", DOCUMENT_COLUMNS + extra, cfg, kept_sample, kept)
    removed_plan = stream(folder / "rejected", DOCUMENT_COLUMNS + extra + ["reason"], cfg, by_reason, removed,
                          key="reason")
    total = count(stats, "input") or 0
    sections = [Section("Removed, by reason", [*read_note(removed_plan, "rejected"),
                                               *reasons(stats.get("rejected_by_reason"), total, by_reason, cfg)])]
    kept_docs = kept_sample.get()
    sections.append(Section("Kept: a sample", [*read_note(kept_plan, "kept"), *kept_docs] or
                            [Note("no document was kept")]))
    if pii and any(d.marks for d in kept_docs):
        sections[-1].blocks.insert(0, Note("Marked: the PII replacements (" + ", ".join(pii) + ") standing in the "
                                          "text, where an address was redacted."))
    if (folder / "normalized").is_dir():
        sections.append(_normalized(folder / "normalized", cfg))
    if count(stats, "quarantined"):  # ("quarantined": "3" from elsewhere: no count, and no section)
        sections.append(quarantine(folder / "quarantine", cfg, stats["quarantined"]))
    series = {"kept": kept, "rejected": removed}
    if (folder / RULES_REJECTED).is_dir():
        series["rejected by the rules before"] = Distributions()
        stream(folder / RULES_REJECTED, DOCUMENT_COLUMNS + classifier_columns(folder / RULES_REJECTED), cfg, None,
               series["rejected by the rules before"])
    sections.append(Section("Distributions", distributions(series)))
    problems = [[clipped(e.get("file"), cfg.field_chars), "damaged", clipped(e.get("error"), cfg.field_chars)]
                for e in _listed(stats.get("file_errors")) if isinstance(e, dict)]
    problems += [[clipped(w.get("file"), cfg.field_chars), "warning", clipped(w.get("warning"), cfg.field_chars)]
                 for w in _listed(stats.get("file_warnings")) if isinstance(w, dict)]
    if problems:
        sections.append(Section("Files", [Table("Damaged files and ignored bytes", ["file", "what", "message"],
                                                problems[:cfg.max_reasons])]))
    exact = kept_plan.whole
    row = FunnelRow(TITLES[stage.kind], stage.source or "", stats.get("input"), stats.get("kept"),
                    stats.get("rejected"), stats.get("quarantined"),
                    kept.text_bytes if exact else round(kept.text_bytes / max(kept_plan.share, 1e-9)), exact,
                    seconds=seconds(stats.get("seconds")))
    return StageView(stage.kind if not stage.source else f"{stage.kind}/{stage.source}", TITLES[stage.kind],
                     str(folder.relative_to(run.out)) if folder != run.out else ".", [row], sections)


def _listed(value) -> list:
    """A list of a stats.json from elsewhere, or [] where it holds something else."""
    return value if isinstance(value, list) else []


# what normalization changes is mostly invisible: white space and control characters are shown by a sign
INVISIBLE = re.compile(r"[\x00-\x20\x7f-\xa0\xad\u1680\u2000-\u200f\u2028-\u202f\u205f\u2060\ufeff]")
SIGNS = {"\n": "⏎", "\r": "␍", "\t": "⇥", " ": "·", "\xa0": "⍽"}


def visible(text: str) -> str:
    return INVISIBLE.sub(lambda m: SIGNS.get(m.group(), f"<U+{ord(m.group()):04X}>"), text)


def _normalized(folder: Path, cfg: ReportConfig) -> Section:
    """What normalization changed in the documents of the job's sample (OUT/normalized/), those of the smallest
    id hashes: each change in its place, white space and control characters made visible."""
    columns = ["id", "at", "before", "after", "left", "right"]
    # a document has several rows of one id hash: each kept as a tuple, which the sample's heap can compare
    sample = Smallest(cfg.kept_examples * MAX_CHANGES, lambda row: tuple(row[name] for name in columns))
    plan = stream(folder, columns, cfg, sample, None)
    rows = [dict(zip(columns, values)) for values in sample.get()]  # the documents of the smallest id hashes first
    first = {}
    for row in rows:
        first.setdefault(row["id"], len(first))
    # the first kept_examples documents whole (a document has at most MAX_CHANGES rows), each one's changes in
    # its text's order
    rows = sorted((row for row in rows if first[row["id"]] < cfg.kept_examples),
                  key=lambda row: (first[row["id"]], row["at"]))
    if not rows:
        return Section("Normalization: what it changed", [*read_note(plan, "normalized"), Note(
            "no change in the documents of the sample (clean.normalized_share of them, by a hash of their id)")])
    def part(row: dict, name: str) -> str:  # the job writes a few characters of context; an output from elsewhere
        return visible(clipped(row[name], cfg.field_chars))  # anything

    shown = [[clipped(row["id"], cfg.field_chars), part(row, "left") + " ⟦" + part(row, "before") + "⟧ "
              + part(row, "right"), part(row, "after") or "(removed)"] for row in rows]
    return Section("Normalization: what it changed", [*read_note(plan, "normalized"), Table(
        "Changes in a sample of the documents", ["document", "as read: ⟦what changed⟧ in its place", "became"],
        shown, "White space and control characters shown as signs: · space, ⏎ line break, ␍ carriage return, "
               "⇥ tab, ⍽ no-break space, <U+XXXX> others.")])


def _replacements(run: Run, stage: StageDir) -> list[str]:
    """The strings redaction put in place of addresses, as the run was set (the defaults when unrecorded)."""
    if stage.kind != "clean":
        return []
    defaults = PiiConfig()
    if run.setting(stage, "pii", "enabled", default=True) is False:
        return []
    return [str(run.setting(stage, "pii", "email_replacement", default=defaults.email_replacement)),
            str(run.setting(stage, "pii", "ip_replacement", default=defaults.ip_replacement))]
