"""The dedup job's output: counts, cluster sizes, and clusters shown whole (the largest, and a sample by a
hash of their head's id): the survivor beside its members, each with its similarity to it as dedup
estimates it (the MinHash signatures of the run's settings, computed here for the few shown)."""

import numpy as np
import pyarrow as pa

from prep.dedup.lsh import estimated_jaccard
from prep.dedup.minhash import MAX_NGRAM, MAX_NUM_PERM, MinHashConfig, signatures
from prep.dedup.shingles import normalize_bytes
from report.documents import clipped, document
from report.layout import StageDir, read_json
from report.lookup import documents_by_id, shared_note
from report.model import Cluster, FunnelRow, Mark, Note, Section, StageView, Table
from report.run import Run
from report.sample import Distributions
from report.scan import id_hash, scanned
from report.stages.common import (
    DOCUMENT_COLUMNS,
    bars_of,
    capped,
    count,
    distributions,
    others,
    outside_note,
    read_note,
    reason_sample,
    reasons,
    seconds,
    stream,
    whole,
)

COLUMNS = ["id", "cluster_id", "cluster", "cluster_size", "kept", "source"]
# A cluster as the report keys it: (its number, its first document's id). The number (dedup's since 2026-12-07)
# tells apart two clusters whose first documents share an id; clusters/ of an older layout has none (None).
Key = tuple[int | None, str]


def _keys(table) -> list[Key]:
    heads = table.column("cluster_id").to_pylist()
    if "cluster" in table.column_names and pa.types.is_integer(table.schema.field("cluster").type):
        return list(zip(table.column("cluster").to_pylist(), heads))
    return [(None, head) for head in heads]


def _order(key: Key) -> tuple:
    """By a hash of the first document's id (the sample's rule), then the number."""
    return id_hash(key[1]), -1 if key[0] is None else key[0]


def gather(run: Run, stage: StageDir) -> StageView:
    cfg, folder = run.cfg, stage.folder
    stats = read_json(folder / "stats.json") or {}
    kept = Distributions()
    kept_plan = stream(folder / "docs", ["text", "lang", "source"], cfg, None, kept)
    counted = [count(stats, k) for k in ("input", "kept", "quarantined")]
    removed = counted[0] - counted[1] - counted[2] if None not in counted else None  # duplicates, and documents
    # the paragraphs' step left too short
    facts = [["input", stats.get("input")], ["kept", stats.get("kept")],
             ["exact duplicates", stats.get("exact_duplicates")], ["near duplicates", stats.get("near_duplicates")],
             ["clusters (2 documents or more)", stats.get("clusters")],
             ["largest cluster", stats.get("largest_cluster")],
             ["threshold (Jaccard of shingles)", stats.get("threshold")],
             ["LSH bands x rows", f"{stats.get('bands')} x {stats.get('rows')}"],
             ["candidate pairs / verified", f"{stats.get('candidate_pairs')} / {stats.get('verified_pairs')}"]]
    sections = [Section("Duplicates", [Table("Counts", ["", "value"], facts),
                                       bars_of(stats.get("cluster_size_histogram") or {}, "Clusters by size",
                                               "clusters")])]
    sources = stats.get("sources") or {}
    if isinstance(sources, dict) and len(sources) > 1:
        keys = ("input", "kept", "exact_duplicates", "near_duplicates", "in_an_earlier_source", "quarantined")
        listed = [[clipped(name, cfg.field_chars), *(s.get(k) for k in keys)] for name, s in sources.items()
                  if isinstance(s, dict)]
        sections[0].blocks.append(Table(f"Sources (deduplicated {clipped(stats.get('scope'), cfg.field_chars)})",
                                        ["source", *keys], capped(listed, cfg, "sources")))
    sections.append(_clusters(run, stage, stats))
    if isinstance(stats.get("paragraphs"), dict):
        sections.append(_paragraphs(run, stage, stats["paragraphs"], count(stats, "input") or 0))
    if isinstance(stats.get("seconds"), dict):
        sections.append(Section("Seconds", [bars_of(stats["seconds"], "Seconds per step", "s")]))
    sections.append(Section("Distributions", [*read_note(kept_plan, "kept"), *distributions({"kept": kept})]))
    row = FunnelRow("Dedup", stage.source or "", stats.get("input"), stats.get("kept"), removed,
                    stats.get("quarantined"), kept.text_bytes if kept_plan.whole else
                    round(kept.text_bytes / max(kept_plan.share, 1e-9)), kept_plan.whole,
                    seconds=seconds(stats.get("seconds")))
    rows = _per_source(sources, row, cfg.max_reasons) if isinstance(sources, dict) and len(sources) > 1 else [row]
    return StageView("dedup", "Dedup", _relative(run, folder), rows, sections)


def _per_source(sources: dict, total: FunnelRow, shown: int) -> list[FunnelRow]:
    """A funnel row per source (the first `shown`, the rest summed in one), then the total (the text bytes are
    counted together, there)."""
    rows = []
    for name, s in sources.items():
        counts = [whole(s.get(k)) for k in ("input", "kept", "quarantined")] if isinstance(s, dict) else [None]
        if None not in counts:
            rows.append(FunnelRow("Dedup", clipped(name, 60), counts[0], counts[1], counts[0] - counts[1] - counts[2],
                                  counts[2]))
    if len(rows) > shown:
        rest = rows[shown:]
        rows = rows[:shown] + [FunnelRow("Dedup", others(len(rest), "sources"), *(
            sum(getattr(r, k) or 0 for r in rest) for k in ("input", "kept", "removed", "quarantined")))]
    total.source = "all sources"
    return rows + [total]


def _paragraphs(run: Run, stage: StageDir, step: dict, total: int) -> Section:
    """The paragraphs' step: the units shared by many documents (the most shared, with their text), and the
    documents it left too short, by reason."""
    cfg = run.cfg
    facts = Table("Paragraphs shared by many documents", ["", "value"],
                  [[k.replace("_", " "), step.get(k)] for k in ("unit", "max_documents", "units", "shared_units",
                                                                "units_removed", "documents_changed",
                                                                "documents_dropped")])
    shared = []
    units_plan, tables = scanned(stage.folder / "paragraphs", ["documents", "text", "source"], cfg.read_bytes,
                                 cfg.max_files)
    for table in tables:
        shared += table.to_pylist()
        del shared[cfg.max_reasons * 4:]
    top = sorted(shared, key=lambda r: (-(r["documents"] or 0), r["text"] or "", str(r.get("source"))))
    top = top[:cfg.max_reasons]
    by_source = any(r.get("source") is not None for r in top)  # sources deduplicated apart: a unit in each
    units = Table("The most shared, kept in the first document only",
                  ["documents", *(["source"] if by_source else []), "text"],
                  [[r["documents"], *([clipped(str(r.get("source")), cfg.field_chars)] if by_source else []),
                    clipped(r["text"] or "(not kept)", cfg.example_chars // 4)] for r in top]
                  ) if top else Note(f"no {step.get('unit', 'paragraph')} was in more than "
                                     f"{step.get('max_documents', 'the allowed number of')} documents")
    counts = {"paragraphs:too_short": step["documents_dropped"]} if step.get("documents_dropped") else {}
    dropped = reason_sample(counts, cfg, lambda row: document(row, cfg))
    dropped_plan = stream(stage.folder / "dropped", DOCUMENT_COLUMNS + ["reason"], cfg, dropped, None, key="reason")
    return Section("Shared paragraphs", [facts, *read_note(units_plan, "shared paragraphs"), units,
                                         *read_note(dropped_plan, "dropped"),
                                         *reasons(counts, total, dropped, cfg)])


def _relative(run: Run, folder) -> str:
    return str(folder.relative_to(run.out)) if folder != run.out else "."


def _clusters(run: Run, stage: StageDir, stats: dict) -> Section:
    """The largest clusters and a sample, their members' text from the stage's input."""
    cfg, folder = run.cfg, stage.folder / "clusters"
    heads: dict[Key, int] = {}
    chosen_plan, tables = scanned(folder, COLUMNS, cfg.read_bytes, cfg.max_files)
    for table in tables:
        for doc_id, key, size in zip(table.column("id").to_pylist(), _keys(table),
                                     table.column("cluster_size").to_pylist()):
            if doc_id == key[1]:
                heads[key] = size
                if len(heads) > 4 * (cfg.largest_clusters + cfg.sampled_clusters) + 1000:
                    heads = _keep(heads, cfg.largest_clusters, cfg.sampled_clusters)
    heads = _keep(heads, cfg.largest_clusters, cfg.sampled_clusters)
    largest = sorted(heads, key=lambda h: (-heads[h], *_order(h)))[:cfg.largest_clusters]
    sampled = [h for h in sorted(heads, key=_order) if h not in largest][:cfg.sampled_clusters]
    members = _members(folder, set(largest) | set(sampled), run)
    wanted = {doc_id for rows in members.values() for doc_id, _ in rows}
    texts = documents_by_id(run.input_files(stage), wanted, cfg.lookup_bytes, cfg.max_files)
    survivors_missing = {h for h in wanted if h not in texts}
    texts.update(documents_by_id([p for p in sorted((stage.folder / "docs").rglob("part-*.parquet"))],
                                 survivors_missing, cfg.lookup_bytes, cfg.max_files))
    # the signatures recomputed for the similarities shown: sizes from a stats.json from elsewhere bounded
    # (num_perm 50,000,000 ran for minutes)
    # (num_perm "x" or a seed that is a list hid the stage: each a whole number in bounds, else the default)
    num_perm, ngram = whole(stats.get("num_perm")), whole(stats.get("ngram"))
    seed = whole(run.setting(stage, "minhash", "seed", default=1), 2**32)
    minhash = MinHashConfig(num_perm=num_perm if num_perm is not None and 2 <= num_perm <= MAX_NUM_PERM else 128,
                            ngram=ngram if ngram is not None and 1 <= ngram <= MAX_NGRAM else 5,
                            seed=1 if seed is None else seed)
    blocks: list = read_note(chosen_plan, "clusters")
    if run.inputs_left_out():
        blocks.append(outside_note("The text of the documents dedup removed (they are not in its output)"))
    elif not run.input_files(stage):
        blocks.append(Note("The documents dedup removed are not in its output: their text is shown where its input "
                           "(Parquet) is at hand, else their id alone."))
    for title, chosen in (("largest", largest), ("sampled by a hash of the head's id", sampled)):
        for head in chosen:
            blocks.append(_cluster(f"Cluster of {heads[head]} ({title})", heads[head], members[head], texts, minhash,
                                   run))
    if not heads:
        blocks.append(Note("no cluster of two documents or more"))
    return Section("Clusters: the survivor beside its members", blocks)


def _keep(heads: dict[Key, int], largest: int, sampled: int) -> dict[Key, int]:
    """The heads that may still be shown: the largest and the smallest hashes."""
    by_size = sorted(heads, key=lambda h: (-heads[h], *_order(h)))[:largest]
    by_hash = sorted(heads, key=_order)[:largest + sampled]
    return {h: heads[h] for h in {*by_size, *by_hash}}


def _members(folder, heads: set[Key], run: Run) -> dict[Key, list[tuple[str, bool]]]:
    """Per head, (id, kept) of its survivor first and of up to cfg.cluster_members others (smallest hashes)."""
    cfg = run.cfg
    found: dict[Key, list[tuple[str, bool]]] = {h: [] for h in heads}
    _, tables = scanned(folder, COLUMNS, cfg.read_bytes, cfg.max_files)
    for table in tables:
        # clusters/ of an older layout, without `kept`: the survivor is not known, its members are shown
        kept_values = table.column("kept").to_pylist() if "kept" in table.column_names else [False] * table.num_rows
        for doc_id, head, kept in zip(table.column("id").to_pylist(), _keys(table), kept_values):
            if head in found:
                found[head].append((doc_id, bool(kept)))
    return {h: sorted(rows, key=lambda r: (not r[1], id_hash(r[0])))[:cfg.cluster_members + 1]
            for h, rows in found.items()}


def _cluster(title: str, size: int, rows: list[tuple[str, bool]], texts: dict, minhash: MinHashConfig,
             run: Run) -> Cluster:
    cfg = run.cfg
    survivor = next((doc_id for doc_id, kept in rows if kept), None)
    others = [doc_id for doc_id, kept in rows if not kept]
    # an id that names several documents of the input (or the survivor's own id on a member) cannot tell
    # which text is meant: shown with a note, and no similarity or line marks are claimed for it
    told = {d for d in [survivor, *others] if d in texts and shared_note(texts[d]) is None}
    if survivor in others:
        told.discard(survivor)
    with_text = [d for d in [survivor, *others] if d in told]
    similarity: dict[str, float] = {}
    if survivor in told and len(with_text) > 1:
        sigs = signatures([texts[d]["text"] or "" for d in with_text], minhash)
        for doc_id, value in zip(with_text[1:], estimated_jaccard(sigs[1:], sigs[0][np.newaxis, :]).tolist()):
            similarity[doc_id] = value

    survivor_lines = set((texts[survivor].get("text") or "").splitlines()) if survivor in told else set()
    survivor_normalized = normalize_bytes(texts[survivor]["text"] or "") if survivor in told else None

    def exact(doc_id: str) -> bool | None:
        if survivor_normalized is None or doc_id not in told:
            return None
        return normalize_bytes(texts[doc_id]["text"] or "") == survivor_normalized

    def shown(doc_id: str | None, member: bool):
        if doc_id is None:
            return None
        row = texts.get(doc_id, {"id": doc_id, "text": ""})
        marks = differing_lines(row.get("text") or "", survivor_lines) if member and doc_id in told else []
        extra = {"text": "not at hand"} if doc_id not in texts else {}
        note = shared_note(row)
        if note is None and member and doc_id == survivor:
            note = "the survivor's id: which of the documents holding it is shown cannot be told"
        if note:
            extra["note"] = note
        return document(row, cfg, fields=("lang", "source"), marks=marks, extra=extra)

    notes = [] if size <= len(rows) else [f"{len(rows)} of its {size} documents shown"]
    if (heads := sum(kept for _, kept in rows)) > 1:
        notes.append(f"{heads} clusters have this id (ids repeat in the input): their members are shown together")
    return Cluster(title, size, shown(survivor, False), [(shown(d, True), similarity.get(d), exact(d)) for d in others],
                   note="; ".join(notes))


def differing_lines(text: str, survivor_lines: set[str]) -> list[Mark]:
    """The lines of a member that its survivor does not have, marked: where two near duplicates differ."""
    marks, at = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip() and line.rstrip("\r\n") not in survivor_lines:
            marks.append(Mark(at, at + len(line.rstrip("\r\n")), "changed", "not in the survivor"))
        at += len(line)
    return marks[:200]
