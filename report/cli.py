"""`python -m jobs.report OUT [--compare OTHER]`: the report of an output folder written again (or a
comparison of two runs), with the command line of every job: --help, --config, --print-config, one flag
per setting (ReportConfig), exit code 2 and one line for a folder it cannot read or write.

Files outside OUT that its run.json and settings.yaml name (the run's inputs, its benchmark files) are read
only with --read-outside true, for a folder you trust: a folder from elsewhere names any file it likes."""

import argparse
import contextlib
import sys
from pathlib import Path

from prep.cli import command_line
from report.config import ReportConfig
from report.gather import UNREADABLE
from report.layout import LayoutError, reading_once, stage_dirs
from report.write import COMPARE_FILE, REPORT_FILE, write_comparison, write_report
from spark_stages.outputs import OWNER_FILE, OutputError, claimed_output, written_names

PROG = "jobs.report"
DESCRIPTION = (f"Write OUT/{REPORT_FILE}, the report of a job's or the pipeline's output folder; with --compare, "
               f"OUT/{COMPARE_FILE}: what two runs over the same input did differently.")


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", metavar="OUT", nargs="?", help="an output folder of a job or of the pipeline (required)")
    parser.add_argument("--compare", metavar="OTHER", help="another run's output folder, over the same input")
    parser.add_argument("--output", metavar="FILE",
                        help=f"where to write the HTML (default OUT/{REPORT_FILE}, or OUT/{COMPARE_FILE})")


def main(argv: list[str] | None = None) -> int:
    try:
        args, cfg = command_line(ReportConfig, argv, prog=PROG, description=DESCRIPTION, add_arguments=_arguments)
    except SystemExit as e:  # --help, --print-config, or a bad flag or setting (2)
        return e.code
    if not args.out:
        print(f"{PROG}: error: OUT is required", file=sys.stderr)
        return 2
    with reading_once():  # each stats.json parsed once: by the checks here and by the report
        return _report(Path(args.out), args, cfg)


def _report(out: Path, args, cfg: ReportConfig) -> int:
    try:
        for folder in filter(None, (out, args.compare and Path(args.compare))):
            stage_dirs(folder)  # a folder holding no tokenmill output: one line, before anything is written
        inside = args.output is None or Path(args.output).resolve().parent == out.resolve()
        if inside and written_names(out) is None:  # its outputs are there (stage_dirs found them), its record not
            raise OutputError(f"{out} has no {OWNER_FILE} (the record of what tokenmill wrote there: copied without "
                              f"it?), so no report is written into it; --output FILE writes the report elsewhere")
        with claimed_output(str(out)) if inside else contextlib.nullcontext():  # no job writes OUT meanwhile
            if args.compare:
                written = write_comparison(out, args.compare, cfg, destination=args.output)
            else:
                written = write_report(out, cfg, destination=args.output)
    except (LayoutError, OutputError, OSError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except UNREADABLE as e:  # a value of a folder from elsewhere that no gatherer checked: one line, no traceback
        why = " ".join(f"{type(e).__name__}: {e}".split())[:300]
        print(f"{PROG}: error: no report of {out} was written: its outputs are not as tokenmill writes them "
              f"({why})", file=sys.stderr)
        return 2
    print(f"report: {written}")
    return 0
