"""A run's curves as one PNG: loss and held-out loss, learning rate, throughput, over steps.

    python -m jobs.plot RUN_DIR [--output FILE]      # default RUN_DIR/metrics.png

Reads RUN_DIR/metrics.jsonl (trainer/loop.py); a step run twice (a resume, a rollback) shows its last
record; the guard's rollbacks and skipped steps are marked. The file may come from elsewhere, or from a run
killed mid-line: a line that is not a record of the shape the loop writes is passed over and counted, a
figure that is not a number is a gap, and the PNG replaces the output file (a link there is replaced, not
followed).
"""

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

MAX_LINE_BYTES = 1 << 20  # the loop's lines are a few hundred bytes; one of 200 MB was read whole
MAX_SOURCES = 20  # held-out sources drawn, the first by name (3,000 in a legend took a minute)
FIGURES = ("loss", "lr", "tokens_per_s")
NOT_PLOTTED = ("start", "benchmarks_at_step", "ranks_at_step")  # the loop's other lines (trainer/metrics.py)


class Read:
    """What metrics.jsonl holds: each step's last record, held-out figures by step, guard events, and the
    lines passed over by reason."""

    def __init__(self):
        self.steps: dict[int, dict[str, float]] = {}
        self.heldout: dict[int, dict[str, tuple[float, float]]] = {}
        self.events: list[tuple[str, int, float]] = []  # (event, at_step, loss)
        self.passed_over: Counter = Counter()


def read(path: Path) -> Read:
    """metrics.jsonl's records; UntrustedPath where it is no regular file, FileNotFoundError where missing."""
    from schemas.trust import open_regular_file

    found = Read()
    with open_regular_file(path) as file:
        for line in _lines(file, found.passed_over):
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                found.passed_over["not UTF-8"] += 1
                continue
            except (ValueError, RecursionError):  # a line cut short by a kill, or not JSON at all
                found.passed_over["not JSON"] += 1
                continue
            if not (isinstance(record, dict) and _taken(record, found)):
                found.passed_over["not a record of the loop's"] += 1
    return found


def _lines(file, passed_over: Counter):
    """The file's lines (split at b"\\n" alone: JSON text may hold U+2028), each at most MAX_LINE_BYTES; a
    longer one is read past in pieces and counted."""
    while line := file.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := file.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
            passed_over[f"over {MAX_LINE_BYTES >> 20} MB"] += 1
        elif line.strip():
            yield line


def _taken(record: dict, found: Read) -> bool:
    """Whether `record` is one the loop writes (a step's, a held-out evaluation's, an event), taken in."""
    if (step := _step(record.get("step"))) is not None:
        found.steps[step] = {key: _number(record.get(key)) for key in FIGURES}
        return True
    if (step := _step(record.get("heldout_at_step"))) is not None and isinstance(record.get("sources"), dict):
        found.heldout[step] = {str(name): (_number(f.get("loss")), _number(f.get("loss_se")))
                               for name, f in record["sources"].items() if isinstance(f, dict)}
        return True
    if (step := _step(record.get("at_step"))) is not None and isinstance(record.get("event"), str):
        found.events.append((record["event"], step, _number(record.get("loss"))))
        return True
    return any(key in record for key in NOT_PLOTTED)


def _step(value) -> int | None:
    """A step number: a whole number a float can place on the axis (True is no step 1)."""
    return value if type(value) is int and abs(value) < 2**53 else None


def _number(value) -> float:
    """A figure to plot: a finite number, else NaN, a gap (null is what the loop writes for one)."""
    if type(value) not in (int, float):
        return math.nan
    try:
        number = float(value)
    except OverflowError:
        return math.nan
    return number if math.isfinite(number) else math.nan


def _text(name: str) -> str:
    """A name shown as it is: matplotlib reads $...$ as mathematics (an unbalanced one failed the plot)."""
    return name.replace("$", r"\$")


def plot(run_dir: Path, output: Path) -> Read:
    """The PNG of run_dir's metrics.jsonl, written to `output`; what was read."""
    import io

    import matplotlib

    matplotlib.use("Agg")  # no display
    import matplotlib.pyplot as plt

    from spark_stages.outputs import replace_bytes

    found = read(run_dir / "metrics.jsonl")
    steps, heldout = found.steps, found.heldout
    x = sorted(steps)
    fig, (loss, lr, speed) = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    loss.plot(x, [steps[s]["loss"] for s in x], label="training loss", linewidth=1)
    for source in sorted({name for figures in heldout.values() for name in figures})[:MAX_SOURCES]:
        at = sorted(s for s in heldout if source in heldout[s])
        values, errors = zip(*(heldout[s][source] for s in at))
        loss.errorbar(at, values, yerr=errors, marker="o", capsize=3, label=_text(f"held-out loss ({source})"))
    for event, at_step, _ in found.events:
        loss.axvline(at_step, color="red" if event == "rollback" else "orange", alpha=0.5, linestyle="--")
    spikes = [(at_step, spike) for event, at_step, spike in found.events if event == "rollback"]
    if spikes:
        loss.scatter(*zip(*spikes), color="red", marker="x", label="spike: rolled back, its data skipped", zorder=3)
    loss.set_ylabel("loss (nats/token)")
    loss.legend()
    lr.plot(x, [steps[s]["lr"] for s in x])
    lr.set_ylabel("learning rate")
    speed.plot(x, [steps[s]["tokens_per_s"] for s in x])
    speed.set_ylabel("tokens/s")
    speed.set_xlabel("step")
    fig.suptitle(_text(f"{run_dir.name}: {len(x)} steps, {len(spikes)} rollbacks"))
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=80)
    plt.close(fig)
    replace_bytes(output, png.getvalue())
    return found


def main(argv=None) -> int:
    from schemas.trust import UntrustedPath

    parser = argparse.ArgumentParser(prog="jobs.plot", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--output", type=Path, help="the PNG (default RUN_DIR/metrics.png)")
    args = parser.parse_args(argv)
    metrics = args.run_dir / "metrics.jsonl"
    output = args.output or args.run_dir / "metrics.png"
    if not output.parent.is_dir():
        print(f"jobs.plot: error: {output.parent}: no such folder for the PNG", file=sys.stderr)
        return 2
    try:
        found = plot(args.run_dir, output)
    except FileNotFoundError:
        print(f"jobs.plot: error: {metrics}: missing (not a run folder?)", file=sys.stderr)
        return 2
    except (UntrustedPath, OSError) as e:  # metrics.jsonl no regular file; the PNG not writable there
        print(f"jobs.plot: error: {metrics if isinstance(e, UntrustedPath) else output}: {e}", file=sys.stderr)
        return 2
    for why, count in found.passed_over.most_common():
        print(f"jobs.plot: {count} line{'' if count == 1 else 's'} of {metrics} passed over: {why}", file=sys.stderr)
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
