"""The shards job's index.json: documents, rows, tokens and padding, each shard's fill, the held-out
shards, and the mixture of the sources (mixture.json) where there is one. Read within the bounds
schemas/index.py reads any index.json in."""

from pathlib import Path

from report.documents import clipped
from report.layout import HELDOUT, StageDir, mixture
from report.model import Bars, FunnelRow, Histogram, Note, Section, StageView, Table, mapping, whole
from report.run import Run
from report.stages.common import capped
from schemas.index import read_index_json
from schemas.trust import open_regular_file

MAX_SHARD_BARS = 40  # more shards than this: their fill as a histogram
FILL_EDGES = (0.0, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)


def index_of(folder: Path) -> dict | None:
    """The folder's index.json, a regular file or a link to one (a hub snapshot's are links; no FIFO waited on:
    one at heldout/index.json hung the report for ever), read within the bounds the loader reads one in."""
    try:
        with open_regular_file(folder / "index.json") as f:
            data = read_index_json(f)
    except (OSError, ValueError):  # UntrustedPath is an OSError, trust.TooLarge a ValueError
        return None
    return data if isinstance(data, dict) else None


def gather(run: Run, stage: StageDir) -> StageView:
    index = index_of(stage.folder) or {}
    totals = mapping(index.get("totals"))
    held = (index_of(stage.folder / HELDOUT) or {}).get("totals") or {}
    keys = ("documents", "rows", "tokens", "real_tokens", "bytes", "padding_waste", "bytes_per_token", "quarantined")
    table = Table("Shards", ["", "training", "held out"], [[k.replace("_", " "), totals.get(k), held.get(k)]
                                                           for k in keys])
    facts = Table("Index", ["", "value"], [[k.replace("_", " "), index.get(k)] for k in
                                           ("seq_len", "vocab_size", "embedding_size", "compression",
                                            "compression_level", "tokenizer_sha256")])
    sections = [Section("Tokens", [table, facts, _fill(index)])]
    documents, heldout = whole(totals.get("documents")), whole(held.get("documents"))
    into = whole(documents + heldout) if documents is not None and heldout is not None else documents
    row = FunnelRow("Shards", stage.source or "", into, documents, None, whole(totals.get("quarantined")),
                    tokens=whole(totals.get("real_tokens")))
    key = f"shards/{stage.source}" if stage.source else "shards"
    return StageView(key, "Shards", str(stage.folder.relative_to(run.out)) if stage.folder != run.out else ".",
                     [row], sections)


def _fill(index: dict):
    """Each shard's real tokens over its tokens: what padding leaves of its rows."""
    shards = [s for s in index.get("shards") or [] if isinstance(s, dict) and whole(s.get("tokens"))
              and whole(s.get("real_tokens", 0)) is not None]
    fills = {str(s.get("file")): s.get("real_tokens", 0) / s["tokens"] for s in shards}
    if not fills:
        return Note("no shard")
    if len(fills) <= MAX_SHARD_BARS:
        return Bars("Shard fill (real tokens / tokens)", fills, "", note="padding only finishes a row to a multiple "
                    "of 128")
    counts = [0] * len(FILL_EDGES)
    for value in fills.values():
        counts[max(i for i, edge in enumerate(FILL_EDGES) if value >= edge)] += 1
    labels = [f"≥{edge:g}" for edge in FILL_EDGES]
    return Histogram("Shards by fill (real tokens / tokens)", labels, {"shards": counts})


def mixture_view(run: Run, folder: Path) -> StageView | None:
    """The sources of a mixture.json and their weights, rows and tokens."""
    data = mixture(folder)
    if not data or not isinstance(data.get("sources"), dict):
        return None
    rows = [[clipped(name, run.cfg.field_chars), s.get("weight"), s.get("rows"), s.get("tokens"), s.get("heldout")]
            for name, s in data["sources"].items() if isinstance(s, dict)]
    return StageView("mixture", "Mixture", str(folder.relative_to(run.out)) if folder != run.out else ".", [],
                     [Section("Sources and weights", [Table("mixture.json", ["source", "weight", "rows", "tokens",
                                                                             "held out"],
                                                                    capped(rows, run.cfg, "sources"))])])
