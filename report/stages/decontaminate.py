"""The decontamination job's output: per benchmark the items found, every matched span (capped per item)
beside the benchmark item it matched and its score, marked in place in the document as it was before the
cut with the window cut around it, and the documents dropped by reason."""

import os
from collections import Counter

from prep.decontam.cut import cut_ranges
from prep.decontam.items import ItemsConfig, read_benchmark
from prep.ingest.inputs import InputError, expand_inputs
from report.documents import clipped, document
from report.layout import StageDir, read_json
from report.lookup import documents_by_id, names_within, shared_note
from report.model import FunnelRow, Mark, Match, Note, Section, StageView, Table, mapping
from report.run import Run
from report.sample import Distributions
from report.scan import id_hash, scanned
from report.stages.common import (
    DOCUMENT_COLUMNS,
    capped,
    distributions,
    outside_note,
    read_note,
    reason_sample,
    reasons,
    seconds,
    stream,
    whole,
)

BENCHMARK_NAMES = 10_000  # names a benchmark's files are looked for among, at most (MMLU: 57 files)

SPAN_COLUMNS = ["id", "benchmark", "item", "start", "end", "score", "kind"]


def gather(run: Run, stage: StageDir) -> StageView:
    cfg, folder = run.cfg, stage.folder
    stats = read_json(folder / "stats.json") or {}
    benchmarks = mapping(stats.get("benchmarks"))
    keys = ("items", "items_found", "share_found", "documents", "spans_exact", "spans_fuzzy", "items_too_short")
    table = Table("Benchmarks", ["benchmark", *(k.replace("_", " ") for k in keys)],
                  capped([[clipped(name, cfg.field_chars), *(b.get(k) for k in keys)] for name, b in benchmarks.items()
                          if isinstance(b, dict)], cfg, "benchmarks"))
    facts = Table("Documents", ["", "value"], [[k.replace("_", " "), stats.get(k)] for k in
                                               ("input", "kept", "modified", "chars_removed", "spans", "dropped",
                                                "quarantined", "fuzzy_over_budget")])
    sections = [Section("Benchmarks", [facts, table]), _matches(run, stage)]
    by_reason = reason_sample(stats.get("dropped_by_reason"), cfg, lambda row: document(row, cfg))
    dropped_plan = stream(folder / "dropped", DOCUMENT_COLUMNS + ["reason"], cfg, by_reason, None, key="reason")
    dropped = reasons(stats.get("dropped_by_reason"), whole(stats.get("input")) or 0, by_reason, cfg)
    sections.append(Section("Dropped, by reason", [*read_note(dropped_plan, "dropped"), *dropped] or
                            [Note("no document was dropped")]))
    kept = Distributions()
    kept_plan = stream(folder / "docs", ["text", "lang"], cfg, None, kept)
    sections.append(Section("Distributions", [*read_note(kept_plan, "kept"), *distributions({"kept": kept})]))
    row = FunnelRow("Decontaminate", stage.source or "", stats.get("input"), stats.get("kept"), stats.get("dropped"),
                    stats.get("quarantined"), kept.text_bytes if kept_plan.whole else
                    round(kept.text_bytes / max(kept_plan.share, 1e-9)), kept_plan.whole,
                    seconds=seconds(stats.get("seconds")))
    key = f"decontaminate/{stage.source}" if stage.source else "decontaminate"
    return StageView(key, "Decontaminate", str(folder.relative_to(run.out)) if folder != run.out else ".", [row],
                     sections)


def _matches(run: Run, stage: StageDir) -> Section:
    """The items matched (the first cfg.match_items by benchmark and a hash of the item), each with up to
    cfg.spans_per_item spans (by a hash of the document's id)."""
    cfg = run.cfg
    spans: dict[tuple[str, str], list[dict]] = {}
    found: Counter = Counter()
    chosen_plan, tables = scanned(stage.folder / "matches", SPAN_COLUMNS, cfg.read_bytes, cfg.max_files)
    for table in tables:
        for row in table.to_pylist():
            key = (str(row["benchmark"]), str(row["item"]))
            found[key] += 1
            mine = spans.setdefault(key, [])
            mine.append(row)
            if len(mine) > 4 * cfg.spans_per_item:
                mine.sort(key=_span_order)
                del mine[cfg.spans_per_item:]
        if len(spans) > 4 * cfg.match_items + 1000:
            spans = {k: spans[k] for k in sorted(spans, key=_item_order)[:cfg.match_items]}
    items = sorted(spans, key=_item_order)[:cfg.match_items]
    shown = {k: sorted(spans[k], key=_span_order)[:cfg.spans_per_item] for k in items}
    ids = {r["id"] for rows in shown.values() for r in rows}
    before = documents_by_id(run.input_files(stage), ids, cfg.lookup_bytes, cfg.max_files)
    all_spans = _all_spans(stage, {i for i in ids if i in before}, cfg)
    window = whole(run.setting(stage, "cut", "window", default=200))
    window = 200 if window is None else window
    cuts: dict[str, list[tuple[int, int]]] = {}  # per document, its cuts: the same for each of its spans shown
    texts = _item_texts(run, stage, {k for k in items})
    blocks: list = read_note(chosen_plan, "matches")
    if ids and run.inputs_left_out():
        blocks.append(outside_note("The text of the documents before the cut"))
    elif ids and not before:
        blocks.append(Note("The documents before the cut are not at hand (the job's input, as Parquet): the spans "
                           "are listed by their place, not shown in their text."))
    if items and not cfg.read_outside and isinstance(run.setting(stage, "benchmarks"), dict):
        blocks.append(outside_note("The text of the benchmark items"))
    if len(found) > len(items):
        blocks.append(Note(f"{len(items)} of the {len(found):,} items matched are shown (report.match_items)."))
    for key in items:
        docs = [_span_document(row, before.get(row["id"]), all_spans.get(row["id"], []), window, run, cuts)
                for row in shown[key]]
        blocks.append(Match(clipped(key[0], cfg.field_chars), clipped(key[1], cfg.field_chars), texts.get(key), docs,
                            found[key]))
    if not items:
        blocks.append(Note("no benchmark item was found in the documents"))
    return Section("Matched spans, beside the items they matched", blocks)


def _item_order(key: tuple[str, str]):
    return key[0], id_hash(key[1]), key[1]


def _span_order(row: dict):
    start = whole(row["start"])
    return id_hash(row["id"]), -1 if start is None else start


def _all_spans(stage: StageDir, ids: set[str], cfg) -> dict[str, list[tuple[int, int]]]:
    """Every span of the documents shown: the cut around one span is widened by its neighbours."""
    found: dict[str, list[tuple[int, int]]] = {}
    if not ids:
        return found
    _, tables = scanned(stage.folder / "matches", ["id", "start", "end"], cfg.read_bytes, cfg.max_files)
    for table in tables:
        for doc_id, start, end in zip(*(table.column(c).to_pylist() for c in ("id", "start", "end"))):
            if doc_id in ids and whole(start) is not None and whole(end) is not None:
                found.setdefault(doc_id, []).append((start, end))
    return found


def _span_document(span: dict, before: dict | None, spans: list[tuple[int, int]], window: int, run: Run,
                   cuts: dict[str, list[tuple[int, int]]]):
    """The document before its cut with this span marked and the window cut around it; its place alone
    when the text is not at hand, or when its id names several documents of the input (which one the span
    is in cannot be told). `cuts`: the cuts of the documents done so far, computed once per document (a
    document of 100,000 spans had them computed again for each of its spans shown)."""
    start, end = whole(span.get("start")), whole(span.get("end"))
    fields = {"score": f"{span['score']:.3f}" if isinstance(span.get("score"), float) else str(span.get("score")),
              "kind": str(span.get("kind")),
              "span": f"characters {start:,}-{end:,}" if start is not None and end is not None else "not recorded"}
    if before is None or start is None or end is None or (note := shared_note(before)):
        fields["text"] = "not at hand" if before is None or start is None or end is None else note
        return document({"id": span["id"], "text": ""}, run.cfg, extra=fields)
    text = before.get("text") or ""
    marks = [Mark(start, end, "span", "matched span")]
    if not spans:  # its document's spans not read: its own cut
        ranges = cut_ranges(text, [(start, end)], window)
    else:
        ranges = cuts[span["id"]] = cuts.get(span["id"]) or cut_ranges(text, spans, window)
    for b, e in ranges:
        if b <= start and end <= e:
            marks += [Mark(b, start, "window", "cut with it"), Mark(end, e, "window", "cut with it")]
    return document(before, run.cfg, fields=("lang", "source"), marks=[m for m in marks if m.end > m.start],
                    extra=fields)


def _item_texts(run: Run, stage: StageDir, items: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The text of the items shown, read from the benchmark files the run named when they are at hand and
    within cfg.benchmark_bytes; only with cfg.read_outside (they are outside the run's folder)."""
    cfg, texts = run.cfg, {}
    if not cfg.read_outside:  # files a settings.yaml names: of the reader's machine, when it came from elsewhere
        return texts
    named = run.setting(stage, "benchmarks", default={}) or {}
    raw_items = run.setting(stage, "items", default={})
    raw_items = mapping(raw_items)
    try:
        items_cfg = ItemsConfig(**{k: v for k, v in raw_items.items() if k in ItemsConfig.__dataclass_fields__})
    except (TypeError, ValueError):
        items_cfg = ItemsConfig()
    for name in sorted({b for b, _ in items}):
        spec = named.get(name) if isinstance(named, dict) else None
        if not isinstance(spec, str):
            continue
        try:
            if not names_within(spec, BENCHMARK_NAMES) or sum(os.path.getsize(f.path)  # ("/": the whole disk)
                                                              for f in expand_inputs(spec)) > cfg.benchmark_bytes:
                continue
            wanted = {item for b, item in items if b == name}
            for item_id, text in read_benchmark(name, spec, items_cfg).items:
                if item_id in wanted:
                    texts[(name, item_id)] = text[:cfg.example_chars]
        except (InputError, OSError, ValueError):
            continue
    return texts
