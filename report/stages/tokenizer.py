"""The tokenizer job's report.json: bytes per token on held-out documents by kind of text, against the
plain BPE of the same size, and how it was trained."""

from report.layout import StageDir, read_json
from report.model import FunnelRow, Section, StageView, Table
from report.run import Run
from report.stages.common import bars_of, seconds

KEYS = ("docs", "bytes", "tokens", "bytes_per_token", "chars_per_token")


def gather(run: Run, stage: StageDir) -> StageView:
    report = read_json(stage.folder / "report.json") or {}
    held = report.get("held_out") or {}
    trained, baseline, gain = (held.get(k) or {} for k in ("trained", "bpe_same_size", "gain"))
    kinds = [k for k, v in trained.items() if isinstance(v, dict)]
    rows = [[kind, *(trained[kind].get(k) for k in KEYS),
             (baseline.get(kind) or {}).get("bytes_per_token") if isinstance(baseline.get(kind), dict) else None,
             f"{100 * gain[kind]:+.1f}%" if isinstance(gain.get(kind), (int, float)) else None] for kind in kinds]
    table = Table("Held-out documents", ["text", *(k.replace("_", " ") for k in KEYS), "BPE bytes/token", "gain"],
                  rows, note=f"round trip exact on {held.get('round_trip_exact')} of {held.get('docs')} documents")
    bars = bars_of({k: trained[k].get("bytes_per_token") for k in kinds if k != "all"},
                   "Bytes per token, by kind of text (held out)", "bytes/token")
    facts = Table("Tokenizer", ["", "value"], [
        ["algorithm", report.get("algorithm")], ["vocabulary", report.get("vocab_size")],
        ["training seconds", report.get("training_seconds")], ["job seconds", report.get("job_seconds")],
        ["peak memory (GiB)", round(report["peak_memory_bytes"] / 2**30, 2)
         if isinstance(report.get("peak_memory_bytes"), int) else None],
        ["vocabulary used (held out)", trained.get("vocab_used_share")],
        ["Rényi efficiency", trained.get("renyi_efficiency")],
        *([["warning", report["warning"]]] if report.get("warning") else [])])
    row = FunnelRow("Train tokenizer", stage.source or "", None, None, None, None,
                    seconds=seconds(report.get("job_seconds")))
    return StageView("tokenizer", "Tokenizer", str(stage.folder.relative_to(run.out)) if stage.folder != run.out
                     else ".", [row], [Section("Bytes per token", [bars, table, facts])])
