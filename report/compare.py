"""Two runs over the same input, document by document: for every stage both ran, the documents whose fate
differs (kept in one, removed in the other, or removed for another reason), counted by the change and shown
side by side.

Bounded whatever the corpus: only documents whose id hash falls under a cut-off are compared (about
cfg.compare_documents of them, the same ones in both runs), read from the id and reason columns of the
stages' outputs within cfg.read_bytes; their text is read for the examples alone."""

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from report.config import ReportConfig
from report.documents import clipped, document
from report.layout import StageDir, read_json
from report.lookup import copies_note, documents_by_id
from report.model import Pair
from report.run import Run
from report.scan import files, id_hash, scanned

KEPT = "kept"
SPACE = 1 << 64


@dataclass
class Fates:
    """What one run did to the compared documents at one stage: {id: the fate of each document of that id}
    (ids may repeat in an input), and where each was read."""
    fate: dict[str, list[str]] = field(default_factory=dict)
    where: dict[str, Path] = field(default_factory=dict)  # the output folder holding the document
    whole: bool = True  # every row group of the outputs was read
    notes: list[str] = field(default_factory=list)  # what could not be compared, and why


@dataclass
class Change:
    before: str  # the fate in the first run
    after: str  # in the other
    count: int
    pairs: list[Pair]


@dataclass
class StageChanges:
    key: str
    title: str
    compared: int  # documents that reached the stage in both runs
    changes: list[Change]
    whole: bool
    notes: list[str] = field(default_factory=list)  # what could not be compared (an output of an older layout)


def cutoff(a: Run, b: Run, cfg: ReportConfig) -> int:
    """The id hash under which documents are compared: about cfg.compare_documents of the larger input."""
    largest = max([_input(stage) for run in (a, b) for stage in run.stages] + [0])
    if largest <= cfg.compare_documents:
        return SPACE
    return SPACE * cfg.compare_documents // largest


def _input(stage: StageDir) -> int:
    stats = read_json(stage.folder / "stats.json") or {}
    value = stats.get("input", stats.get("records"))
    return value if isinstance(value, int) else 0


# The outputs of each stage that hold documents, and the fate of a document found there (None: the reason column)
OUTPUTS = {"extract": {"docs": KEPT},
           "clean": {"docs": KEPT, "rejected": None},
           "quality": {"docs": KEPT, "rejected": None},
           "dedup": {"docs": KEPT, "dropped": None},
           "decontaminate": {"docs": KEPT, "dropped": None}}


def fates(run: Run, stage: StageDir, under: int) -> Fates:
    """The fates of the compared documents (id hash under `under`) at one stage of one run."""
    cfg, found = run.cfg, Fates()
    for name, fate in OUTPUTS[stage.kind].items():
        folder = stage.folder / name
        columns = ["id"] if fate else ["id", "reason"]
        plan, tables = scanned(folder, columns, cfg.read_bytes, cfg.max_files)
        found.whole &= plan.whole and not plan.damaged
        for table in tables:
            if "id" not in table.column_names:
                _note(found, f"{stage.kind}/{name} has no id column: its documents are not compared")
                continue
            ids = table.column("id").to_pylist()
            if fate is None and "reason" not in table.column_names:  # an older layout: removed, for no reason told
                _note(found, f"{stage.kind}/{name} has no reason column: its documents are counted as "
                             "removed with (no reason)")
            reasons = [clipped(r, cfg.field_chars) if r is not None else "(no reason)"
                       for r in (table.column("reason").to_pylist() if "reason" in table.column_names
                                 else [None] * table.num_rows)] if fate is None else None
            for i, doc_id in enumerate(ids):
                if doc_id is not None and id_hash(doc_id) < under:
                    found.fate.setdefault(doc_id, []).append(fate or f"{_removed(stage.kind)}: {reasons[i]}")
                    found.where.setdefault(doc_id, folder)
    if stage.kind == "dedup":
        _duplicates(stage, found, under, cfg)
    if stage.kind in CUTS:
        _cut(stage, found, cfg)
    return found


def _note(found: Fates, note: str) -> None:
    if note not in found.notes:
        found.notes.append(note)


def _removed(kind: str) -> str:
    return "dropped" if kind in ("dedup", "decontaminate") else "rejected"


def _duplicates(stage: StageDir, found: Fates, under: int, cfg: ReportConfig) -> None:
    plan, tables = scanned(stage.folder / "clusters", ["id", "kept"], cfg.read_bytes, cfg.max_files)
    found.whole &= plan.whole and not plan.damaged
    for table in tables:
        if "id" not in table.column_names or "kept" not in table.column_names:  # an older layout
            _note(found, "dedup/clusters has no id or kept column: the duplicates dedup removed are not compared")
            continue
        for doc_id, kept in zip(table.column("id").to_pylist(), table.column("kept").to_pylist()):
            if doc_id is not None and not kept and id_hash(doc_id) < under:
                found.fate.setdefault(doc_id, []).append("removed: a duplicate")


# the output naming by id the kept documents a stage cut text from, and their fate
CUTS = {"decontaminate": ("matches", "kept, spans cut"), "dedup": ("changed", "kept, paragraphs cut")}


def _cut(stage: StageDir, found: Fates, cfg: ReportConfig) -> None:
    """Kept documents that lost text (a benchmark's span, a paragraph shared by many) are kept with a
    difference."""
    output, cut = CUTS[stage.kind]
    plan, tables = scanned(stage.folder / output, ["id"], cfg.read_bytes, cfg.max_files)
    found.whole &= plan.whole and not plan.damaged
    lost_text: set[str] = set()  # each id's fates rewritten once: an id in a million rows was a million rewrites
    for table in tables:
        if "id" in table.column_names:
            lost_text.update(doc_id for doc_id in table.column("id").to_pylist() if doc_id in found.fate)
    for doc_id in lost_text:  # (which of the documents of a repeated id lost text cannot be told)
        found.fate[doc_id] = [cut if fate == KEPT else fate for fate in found.fate[doc_id]]


def stage_changes(a: Run, b: Run, sa: StageDir, sb: StageDir, under: int) -> StageChanges:
    cfg = a.cfg
    fa, fb = fates(a, sa, under), fates(b, sb, under)
    both = fa.fate.keys() & fb.fate.keys()
    moved: dict[tuple[str, str], list[str]] = {}
    counts: Counter = Counter()
    compared = 0
    for doc_id in both:
        # the documents of an id that repeats: the fates both runs gave are matched first, the rest paired in order
        mine, theirs = Counter(fa.fate[doc_id]), Counter(fb.fate[doc_id])
        compared += min(sum(mine.values()), sum(theirs.values()))
        pairs = list(zip(sorted((mine - theirs).elements()), sorted((theirs - mine).elements())))
        counts.update(pairs)
        for key in set(pairs):
            moved.setdefault(key, []).append(doc_id)
    shown = {key: sorted(ids, key=id_hash)[:cfg.compare_examples] for key, ids in moved.items()}
    texts_a = _texts(a, sa, fa, {i for ids in shown.values() for i in ids})
    texts_b = _texts(b, sb, fb, {i for ids in shown.values() for i in ids})
    changes = [Change(before, after, n, [Pair(_shown(texts_a.get(i), i, before, len(fa.fate[i]), cfg),
                                              _shown(texts_b.get(i), i, after, len(fb.fate[i]), cfg))
                                         for i in shown[(before, after)]])
               for (before, after), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:cfg.max_reasons]]
    key = sa.kind + (f"/{sa.source}" if sa.source else "")
    notes = [f"this run: {n}" for n in fa.notes] + [f"the other run: {n}" for n in fb.notes]
    return StageChanges(key, sa.kind, compared, changes, fa.whole and fb.whole, notes)


def _texts(run: Run, stage: StageDir, found: Fates, ids: set[str]) -> dict[str, dict]:
    """The rows of the documents shown, from the output holding each (or the stage's input, for the
    duplicates dedup removed)."""
    rows: dict[str, dict] = {}
    by_folder: dict[Path, set[str]] = {}
    for doc_id in ids:
        if doc_id in found.where:
            by_folder.setdefault(found.where[doc_id], set()).add(doc_id)
    for folder, mine in by_folder.items():
        rows.update(documents_by_id(files(folder), mine, run.cfg.lookup_bytes, run.cfg.max_files))
    if missing := ids - rows.keys():
        rows.update(documents_by_id(run.input_files(stage), missing, run.cfg.lookup_bytes, run.cfg.max_files))
    return rows


def _shown(row: dict | None, doc_id: str, fate: str, copies: int, cfg: ReportConfig):
    """A document of one run, `copies` the documents of its id the run's outputs hold."""
    extra = {"fate": fate} | ({"note": note} if (note := copies_note(copies)) else {})
    return document(row or {"id": doc_id, "text": ""}, cfg, fields=("lang", "source"), extra=extra)


def matched_stages(a: Run, b: Run) -> list[tuple[StageDir, StageDir]]:
    """The stages of the two runs to compare, matched by kind and source."""
    theirs = {(s.kind, s.source): s for s in b.stages}
    return [(s, theirs[(s.kind, s.source)]) for s in a.stages if s.kind in OUTPUTS and (s.kind, s.source) in theirs]


def compare(out: Path, other: Path, cfg: ReportConfig) -> tuple[Run, Run, list[StageChanges], float]:
    """(the two runs, each stage's changes, the share of the documents compared)."""
    a, b = Run.of(out, cfg), Run.of(other, cfg)
    under = cutoff(a, b, cfg)
    return a, b, [stage_changes(a, b, sa, sb, under) for sa, sb in matched_stages(a, b)], under / SPACE
