"""The clean job's output (and the pipeline's quality step, which writes the same kind): every reason a
document was rejected with examples, a sample of the kept ones with the PII replacements marked, the
quarantined records, and the distributions of the kept and the rejected side by side."""

from prep.pii import PiiConfig
from report.documents import clipped, document, metadata_fields, replacement_marks
from report.layout import StageDir, read_json
from report.model import Document, FunnelRow, Note, Section, StageView, Table
from report.run import Run
from report.sample import Distributions, Smallest
from report.stages.common import (
    DOCUMENT_COLUMNS,
    classifier_columns,
    distributions,
    quarantine,
    read_note,
    reasons,
    seconds,
    stream,
)

TITLES = {"clean": "Clean", "quality": "Quality classifier"}


def gather(run: Run, stage: StageDir) -> StageView:
    cfg, folder = run.cfg, stage.folder
    stats = read_json(folder / "stats.json") or {}
    pii = _replacements(run, stage)

    def shown(row: dict) -> Document:
        return document(row, cfg, marks=replacement_marks(row.get("text") or "", pii),
                        extra=metadata_fields(row, cfg))

    extra = classifier_columns(folder / "docs")
    kept, removed = Distributions(), Distributions()
    kept_sample, by_reason = Smallest(cfg.kept_examples, shown), Smallest(cfg.examples_per_reason, shown)
    kept_plan = stream(folder / "docs", DOCUMENT_COLUMNS + extra, cfg, kept_sample, kept)
    removed_plan = stream(folder / "rejected", DOCUMENT_COLUMNS + extra + ["reason"], cfg, by_reason, removed,
                          key="reason")
    total = stats.get("input") or 0
    sections = [Section("Removed, by reason", [*read_note(removed_plan, "rejected"),
                                               *reasons(stats.get("rejected_by_reason") or {}, total, by_reason, cfg)])]
    kept_docs = kept_sample.get()
    sections.append(Section("Kept: a sample", [*read_note(kept_plan, "kept"), *kept_docs] or
                            [Note("no document was kept")]))
    if pii and any(d.marks for d in kept_docs):
        sections[-1].blocks.insert(0, Note("Marked: the PII replacements (" + ", ".join(pii) + ") standing in the "
                                          "text, where an address was redacted."))
    if stats.get("quarantined"):
        sections.append(quarantine(folder / "quarantine", cfg, stats["quarantined"]))
    sections.append(Section("Distributions", distributions({"kept": kept, "rejected": removed})))
    problems = [[clipped(e.get("file"), cfg.field_chars), "damaged", clipped(e.get("error"), cfg.field_chars)]
                for e in stats.get("file_errors") or [] if isinstance(e, dict)]
    problems += [[clipped(w.get("file"), cfg.field_chars), "warning", clipped(w.get("warning"), cfg.field_chars)]
                 for w in stats.get("file_warnings") or [] if isinstance(w, dict)]
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


def _replacements(run: Run, stage: StageDir) -> list[str]:
    """The strings redaction put in place of addresses, as the run was set (the defaults when unrecorded)."""
    if stage.kind != "clean":
        return []
    defaults = PiiConfig()
    if run.setting(stage, "pii", "enabled", default=True) is False:
        return []
    return [str(run.setting(stage, "pii", "email_replacement", default=defaults.email_replacement)),
            str(run.setting(stage, "pii", "ip_replacement", default=defaults.ip_replacement))]
