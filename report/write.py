"""Writing a report into an output folder: recorded as tokenmill's (spark_stages/outputs.py) before it is
written, written beside and renamed into place, so a reader never sees half a report. A job's run also
leaves its settings (settings.yaml, the --print-config YAML: `--config OUT/settings.yaml` runs it again)
and run.json (the job, its inputs, the version, its seconds), which the report reads back."""

import datetime
from pathlib import Path

from report.config import ReportConfig
from report.gather import UNREADABLE, run_view, version
from report.layout import LayoutError, reading_once
from report.render import report_page
from report.render_compare import comparison_page
from report.run import RUN_FILE, SETTINGS_FILE, STAGE_SECONDS
from spark_stages.outputs import claim_folder, record_written, replace_text, write_json

REPORT_FILE = "report.html"
COMPARE_FILE = "compare.html"


DEFAULT = ReportConfig()


def write_report(out, cfg: ReportConfig = DEFAULT, *, destination=None, job: str | None = None,
                 settings: str | None = None, inputs: dict | None = None, seconds: float | None = None,
                 stage_seconds: dict | None = None, stopped: str | None = None) -> Path:
    """OUT/report.html (or `destination`) of the output folder `out`. With `job`, first records the run:
    OUT/settings.yaml (`settings`) and OUT/run.json (`inputs` by source, `seconds`, the seconds of the
    stages that record none of their own, `stage_seconds`, and when it finished, or why it `stopped`: then
    what OUT holds may be an earlier run's). The path written."""
    out = Path(out)
    target = Path(destination) if destination else out / REPORT_FILE
    names = ([RUN_FILE] + ([SETTINGS_FILE] if settings is not None else []) if job else [])
    inside = target.parent.resolve() == out.resolve()
    if names or inside:
        record_written(out, names + ([target.name] if inside else []))
    if job:
        write_json(out / RUN_FILE, {"job": job, "version": version(), "inputs": inputs or {},
                                    "seconds": None if seconds is None else round(seconds, 1),
                                    **({STAGE_SECONDS: stage_seconds} if stage_seconds else {}),
                                    **({"stopped": stopped} if stopped is not None else {
                                        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(
                                            timespec="seconds")})})
        if settings is not None:
            replace_text(out / SETTINGS_FILE, f"# jobs.{job} as it ran (tokenmill {version()}); "
                                              f"--config {SETTINGS_FILE} runs it again\n{settings}")
    with reading_once():
        page = report_page(run_view(out, cfg))
    replace_text(target, page)
    return target


def forget_run(out) -> None:
    """Removes OUT's record of an earlier run (run.json, settings.yaml, report.html: what write_report wrote)
    as a new run starts: a run killed after a stage replaced its outputs had left the earlier run's record
    saying it finished, over outputs of two runs (the pipeline's stages of the new input beside shards of
    the old). Only names tokenmill recorded writing."""
    out = Path(out)
    for name in sorted(claim_folder(out) & {RUN_FILE, SETTINGS_FILE, REPORT_FILE}):
        (out / name).unlink(missing_ok=True)


def write_comparison(out, other, cfg: ReportConfig = DEFAULT, *, destination=None) -> Path:
    """OUT/compare.html (or `destination`): the run in `out` against the run in `other` over the same input."""
    out = Path(out)
    target = Path(destination) if destination else out / COMPARE_FILE
    if target.parent.resolve() == out.resolve():
        record_written(out, [target.name])
    try:
        with reading_once():
            page = comparison_page(out, Path(other), cfg)
    except UNREADABLE as e:
        raise LayoutError(f"{out} and {other} cannot be compared: {type(e).__name__}: {str(e)[:200]}") from None
    replace_text(target, page)
    return target
