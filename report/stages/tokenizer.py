"""The tokenizer job's report.json: bytes per token on held-out documents by kind of text, against the
plain BPE of the same size, and how it was trained."""

from report.documents import clipped
from report.layout import StageDir, read_json
from report.model import FunnelRow, Section, StageView, Table, finite, mapping, whole
from report.run import Run
from report.stages.common import bars_of, capped, seconds

KEYS = ("docs", "bytes", "tokens", "bytes_per_token", "chars_per_token")


def gather(run: Run, stage: StageDir) -> StageView:
    cfg = run.cfg
    report = read_json(stage.folder / "report.json") or {}
    held = mapping(report.get("held_out"))
    trained, baseline, gain = (mapping(held.get(k)) for k in ("trained", "bpe_same_size", "gain"))
    kinds = [k for k, v in trained.items() if isinstance(v, dict)]
    gains = {kind: finite(gain.get(kind)) for kind in kinds}
    rows = [[clipped(kind, cfg.field_chars), *(trained[kind].get(k) for k in KEYS),
             mapping(baseline.get(kind)).get("bytes_per_token"),
             None if gains[kind] is None else f"{100 * gains[kind]:+.1f}%"] for kind in kinds]
    table = Table("Held-out documents", ["text", *(k.replace("_", " ") for k in KEYS), "BPE bytes/token", "gain"],
                  capped(rows, cfg, "kinds of text"), note=f"round trip exact on "
                  f"{whole(held.get('round_trip_exact'))} of {whole(held.get('docs'))} documents")
    bars = bars_of({clipped(k, cfg.field_chars): trained[k].get("bytes_per_token") for k in kinds if k != "all"},
                   "Bytes per token, by kind of text (held out)", "bytes/token")
    facts = Table("Tokenizer", ["", "value"], [
        ["algorithm", report.get("algorithm")], ["vocabulary", report.get("vocab_size")],
        ["training seconds", report.get("training_seconds")], ["job seconds", report.get("job_seconds")],
        ["peak memory (GiB)", None if whole(report.get("peak_memory_bytes")) is None
         else round(report["peak_memory_bytes"] / 2**30, 2)],
        ["vocabulary used (held out)", trained.get("vocab_used_share")],
        ["Rényi efficiency", trained.get("renyi_efficiency")],
        *([["warning", report["warning"]]] if report.get("warning") else [])])
    row = FunnelRow("Train tokenizer", stage.source or "", None, None, None, None,
                    seconds=seconds(report.get("job_seconds")))
    return StageView("tokenizer", "Tokenizer", str(stage.folder.relative_to(run.out)) if stage.folder != run.out
                     else ".", [row], [Section("Bytes per token", [bars, table, facts])])
