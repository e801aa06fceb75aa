"""A run's report as data (RunView): each stage's view from its gatherer, the mixture of its sources, and
what was recorded of the run itself (its settings, version, inputs)."""

import importlib.metadata
from pathlib import Path

import pyarrow as pa

from report.config import ReportConfig
from report.documents import clipped
from report.layout import StageDir, damage, read_json
from report.model import Note, RunView, Section, StageView
from report.run import STAGE_SECONDS, Run
from report.stages import GATHERERS
from report.stages.common import finite
from report.stages.shards import mixture_view


def version() -> str:
    try:
        return importlib.metadata.version("tokenmill")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def run_view(out: Path, cfg: ReportConfig) -> RunView:
    """The report of the output folder `out` (LayoutError when it holds no tokenmill output)."""
    run = Run.of(out, cfg)
    views = [_stage_view(run, stage) for stage in run.stages]
    # a run.json from elsewhere: only finite numbers are seconds (an int of 400 digits is no float)
    if not run.pipeline and (seconds := finite(run.info.get("seconds"))) is not None:
        for row in views[0].funnel:  # a job of its own: the runner timed it (the shards job times nothing else)
            row.seconds = seconds if row.seconds is None else row.seconds
    timed = run.info.get(STAGE_SECONDS)
    for view in views if isinstance(timed, dict) else []:  # a pipeline's stages that record no time themselves
        seconds = finite(timed.get(view.key))
        for row in view.funnel:
            if row.seconds is None and seconds is not None:
                row.seconds = seconds
    _estimate_tokens(run, views)
    for folder in sorted({s.folder.parent for s in run.stages if s.kind == "shards" and s.source}):
        if (view := mixture_view(run, folder)) is not None:
            views.append(view)
    info = run.info
    facts = {"tokenmill (the run)": clipped(info.get("version", "not recorded"), cfg.field_chars),
             "tokenmill (this report)": version()}
    if isinstance(info.get("job"), str):
        facts["job"] = clipped(info["job"], cfg.field_chars)
    if isinstance(info.get("inputs"), dict):
        for name, spec in list(info["inputs"].items())[:cfg.max_reasons]:
            facts[f"input {clipped(name, cfg.field_chars)}"] = clipped(spec, cfg.field_chars)
    for key in ("finished", "stopped", "seconds"):
        if isinstance(info.get(key), (str, int, float)):
            facts[key] = clipped(info[key], cfg.field_chars)
    settings = run.settings_text[:cfg.settings_chars] if run.settings_text else None
    job = info["job"] if isinstance(info.get("job"), str) else ("pipeline" if run.pipeline else run.stages[0].kind)
    return RunView(out.name or str(out), clipped(job, cfg.field_chars), views, settings, facts)


# what reading an output that is not as tokenmill writes it raises (pyarrow's errors: a column of another type)
UNREADABLE = (ArithmeticError, LookupError, AttributeError, TypeError, ValueError, RecursionError,
              NotImplementedError, pa.ArrowException)


def _stage_view(run: Run, stage: StageDir) -> StageView:
    """A stage's view; where its outputs are not as tokenmill writes them (edited, or of another version: an
    output folder can come from elsewhere), a view saying so, and the report of the other stages stands."""
    folder = str(stage.folder.relative_to(run.out)) if stage.folder != run.out else "."
    try:
        view = GATHERERS[stage.kind](run, stage)
    except UNREADABLE as e:
        key = f"{stage.kind}/{stage.source}" if stage.source else stage.kind
        why = f"{type(e).__name__}: {e}"
        return StageView(key, stage.kind.capitalize(), folder, [], [Section("Not shown", [Note(
            f"The outputs of {folder} are not as tokenmill writes them ({clipped(why, run.cfg.field_chars)}): "
            "edited, or written by another version. The other stages are shown.")])])
    damaged = [Note(f"{folder}/{name} is damaged ({why}): what it counts is not shown")
               for name in ("stats.json", "report.json") if (why := damage(stage.folder / name))]
    if damaged:
        view.sections.insert(0, Section("Damaged", damaged))
    return view


def _estimate_tokens(run: Run, views: list) -> None:
    """Tokens of the stages before the shards, where the run trained a tokenizer: their text bytes over its
    bytes per token on held-out documents (an estimate, marked as one)."""
    tokenizer = next((s for s in run.stages if s.kind == "tokenizer"), None)
    held = read_json(tokenizer.folder / "report.json") if tokenizer else None
    for key in ("held_out", "trained", "all"):  # a report.json from elsewhere: of any shape
        held = held.get(key) if isinstance(held, dict) else None
    per_token = held.get("bytes_per_token") if isinstance(held, dict) else None
    if not isinstance(per_token, int | float) or isinstance(per_token, bool) or not 0.01 <= per_token <= 1e6:
        return
    for view in views:
        for row in view.funnel:
            if row.tokens is None and row.text_bytes is not None:
                row.tokens, row.tokens_exact = round(row.text_bytes / per_token), False
