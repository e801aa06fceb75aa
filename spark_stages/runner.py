"""The one runner behind every Spark job's command line (jobs/*.py).

A Stage is a typed Config, `run(spark, inputs, cfg, out) -> stats` and a one-paragraph summary of
the stats. The runner turns the Config into flags and a YAML `--config` file (prep/cli.py), adds
`--input` (repeatable; `NAME=PATH` for a stage that takes named sources; every stage receives its input
as named sources, one input without a name being the source "default"), `--output` and `--conf
key=value` (any Spark setting), expands the input, starts Spark,
checks that the executors can import what the stage runs, runs it and prints the summary. Bad
input, configuration or executors, or an output that is not the job's to write (an input's, another
job's, a folder of files tokenmill did not write: spark_stages/outputs.py): exit code 2 and one line,
before any work is done.
"""

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prep.cli import command_line
from prep.config import to_yaml
from prep.ingest.inputs import (
    DEFAULT_SOURCE,
    InputError,
    Sources,
    all_files,
    expand_inputs,
    expand_sources,
    input_roots,
    named_inputs,
)
from spark_stages.executors import ExecutorEnvironmentError, check_executors
from spark_stages.outputs import OutputError, check_apart, claimed_output
from spark_stages.session import get_spark, parse_conf

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stage:
    name: str  # the command: jobs/NAME.py, `python -m jobs.NAME`; the Spark application tokenmill-NAME
    description: str  # one line for --help
    config: type  # the stage's Config dataclass: the only place its defaults live
    # run(spark, sources, cfg, out: str) -> stats (dict); sources: {name: list[InputFile]} (prep.ingest.inputs
    # Sources), one input given without a name being the one source "default"
    run: Callable
    summary: Callable[[dict], str]  # the stats for the console
    modules: tuple[str, ...]  # what its Spark tasks import: checked on an executor before anything runs
    # check(cfg, sources): ValueError/OSError if it cannot run, before Spark starts (the files are only listed)
    check: Callable[[object, Sources], None] | None = None
    named_inputs: bool = False  # takes `--input NAME=PATH ...`
    section_files: dict[str, str] = field(default_factory=dict)  # extra flags naming a section's YAML file
    per_source: str | None = None  # the config's per-source settings (prep/cli.py command_line), if it has any
    # extra repeatable `--FLAG NAME=VALUE` flags, each adding to a mapping setting at a path (prep/cli.py)
    mapping_flags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a stage whose inputs come by flags of their own (train_classifier's --label NAME=PATH): adds them to the
    # parser, and input_specs(args) gives its named sources ({} when none was given: --input is then required)
    input_flags: Callable[[argparse.ArgumentParser], None] | None = None
    input_specs: Callable[[argparse.Namespace], dict[str, str]] | None = None
    # the specs of files it reads besides its inputs (decontaminate's benchmarks): kept apart from the output too
    other_inputs: Callable[[object], list[str]] | None = None


def _add_paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", action="append", default=[],
                        help="files, directories or globs, comma-separated (required; repeatable)")
    parser.add_argument("--output", help="the output folder (required)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, as with spark-submit (repeatable)")


def local_output(output: str) -> str:
    """The output folder as an absolute local path; ValueError for a URL. Outputs are written by the driver and
    the tasks through the local file system (a mount is one): `s3://b/x` had failed in the tasks after Spark
    started, leaving ./s3:/b/x behind, and `run:1`, relative, was read by pyarrow as a URL."""
    if "://" in output:
        raise ValueError(f"--output {output}: outputs are written to a local or mounted folder, not a URL (write "
                         "there and copy)")
    return os.path.abspath(output)


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def run_stage(stage: Stage, argv: list[str] | None = None) -> int:
    """The job's exit code: 0 done, 2 bad input, configuration or executors (one line on stderr)."""
    prog = f"jobs.{stage.name}"
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        _add_paths(parser)
        if stage.input_flags:
            stage.input_flags(parser)

    try:
        args, cfg = command_line(stage.config, argv, prog=prog, description=stage.description,
                                 add_arguments=add_arguments, section_files=stage.section_files,
                                 per_source=stage.per_source, mapping_flags=stage.mapping_flags)
    except SystemExit as e:  # --help, --print-config, or a bad flag or config (2): the exit code is the result
        return e.code
    try:
        flagged = stage.input_specs(args) if stage.input_specs else {}
    except (InputError, ValueError) as e:
        return _fail(prog, str(e))
    if not ((args.input or flagged) and args.output):
        return _fail(prog, "--input and --output are required")
    with contextlib.ExitStack() as claimed:
        try:
            parse_conf(args.conf)
            named = named_inputs(args.input) if stage.named_inputs else None
            # --input given more than once: each value apart (one may be a file whose name holds a comma)
            parts = flagged or named or {DEFAULT_SOURCE: args.input}
            specs = {name: spec if isinstance(spec, str) else ",".join(spec) for name, spec in parts.items()}
            inputs = expand_sources(parts)
            if stage.check:
                stage.check(cfg, inputs)
            args.output = local_output(args.output)
            others = stage.other_inputs(cfg) if stage.other_inputs else []
            roots = [root for spec in [*parts.values(), *others] for root in input_roots(spec)]
            check_apart(args.output, roots, [f.path for f in all_files(inputs)]
                        + [f.path for spec in others for f in expand_inputs(spec)])
            claimed.enter_context(claimed_output(args.output))  # the whole run: a second job here is refused
        except (InputError, ValueError, OSError) as e:
            return _fail(prog, str(e))
        return _run(stage, inputs, cfg, args, specs)


def _run(stage: Stage, inputs, cfg, args, specs: dict[str, str]) -> int:
    spark = get_spark(f"tokenmill-{stage.name.replace('_', '-')}", args.conf)
    try:
        check_executors(spark, stage.modules)
    except ExecutorEnvironmentError as e:
        spark.stop()
        return _fail(f"jobs.{stage.name}", str(e))
    from report.write import forget_run  # (here: executors import this module and need no report)

    forget_run(args.output)
    started = time.time()
    try:
        stats = stage.run(spark, inputs, cfg, args.output)
    except (InputError, OutputError) as e:  # found on the way (a source dedup empties, a stranger's stage folder)
        if _holds_outputs(args.output):  # run.json says it stopped: what OUT holds may be an earlier run's
            _write_report(stage, cfg, args.output, specs, time.time() - started, {}, stopped=str(e))
        return _fail(f"jobs.{stage.name}", str(e))
    log.info("%s done in %.1f s", stage.name, time.time() - started)
    print(stage.summary(stats))
    _write_report(stage, cfg, args.output, specs, time.time() - started, stats)
    return 0


def _holds_outputs(out: str) -> bool:
    """Whether a stage of a run that stopped wrote its outputs there (the report is of those)."""
    from report.layout import LayoutError, stage_dirs

    try:
        return bool(stage_dirs(Path(out)))
    except LayoutError:
        return False


def _write_report(stage: Stage, cfg, out: str, specs: dict[str, str], seconds: float, stats: dict,
                  stopped: str | None = None) -> None:
    """OUT/report.html, with the settings and inputs of the run beside it (report/write.py). The outputs are
    committed by now: a report that cannot be written costs a warning, never the job's exit code."""
    try:
        # here, not above: executors import this module and need no report
        from report import ReportConfig, write_report
        from report.run import STAGE_SECONDS

        # the run's own inputs and benchmark files, given to this job: read for the documents' text
        written = write_report(out, ReportConfig(read_outside=True), job=stage.name, settings=to_yaml(cfg),
                               inputs=specs, seconds=seconds, stopped=stopped,
                               stage_seconds=stats.get(STAGE_SECONDS) if isinstance(stats, dict) else None)
    except Exception as e:  # whatever it is, the job's outputs stand
        log.warning("%s: the report was not written (%s: %s); the job's outputs are complete", out,
                    type(e).__name__, e)
        return
    print(f"report: {written}")
