"""A run's curves as one PNG: loss and held-out loss, learning rate, throughput, over steps.

    python -m jobs.plot RUN_DIR [--output FILE]      # default RUN_DIR/metrics.png

Reads RUN_DIR/metrics.jsonl (trainer/loop.py); a step run twice (a resume, a rollback) shows its last
record; the guard's rollbacks and skipped steps are marked.
"""

import argparse
import json
import math
import sys
from pathlib import Path


def read(run_dir: Path) -> tuple[dict[int, dict], dict[int, dict], list[dict]]:
    """(each step's last record, held-out figures by step, guard events)."""
    steps, heldout, events = {}, {}, []
    for line in (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line, object_hook=_nulls_as_nan)
        if "step" in record:
            steps[record["step"]] = record
        elif "heldout_at_step" in record:
            heldout[record["heldout_at_step"]] = record["sources"]
        elif "event" in record:
            events.append(record)
    return steps, heldout, events


def _nulls_as_nan(record: dict) -> dict:
    """metrics.jsonl writes a figure that is not a number as null (schemas/strict_json.py): NaN to plot."""
    return {key: math.nan if value is None else value for key, value in record.items()}


def plot(run_dir: Path, output: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display
    import matplotlib.pyplot as plt

    steps, heldout, events = read(run_dir)
    x = sorted(steps)
    fig, (loss, lr, speed) = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    loss.plot(x, [steps[s]["loss"] for s in x], label="training loss", linewidth=1)
    for source in sorted({name for figures in heldout.values() for name in figures}):
        at = sorted(s for s in heldout if source in heldout[s])
        values = [heldout[s][source]["loss"] for s in at]
        errors = [heldout[s][source]["loss_se"] for s in at]
        loss.errorbar(at, values, yerr=errors, marker="o", capsize=3, label=f"held-out loss ({source})")
    for event in events:
        loss.axvline(event["at_step"], color="red" if event["event"] == "rollback" else "orange", alpha=0.5,
                     linestyle="--")
    spikes = [e for e in events if e["event"] == "rollback"]
    if spikes:
        loss.scatter([e["at_step"] for e in spikes], [e["loss"] for e in spikes], color="red", marker="x",
                     label="spike: rolled back, its data skipped", zorder=3)
    loss.set_ylabel("loss (nats/token)")
    loss.legend()
    lr.plot(x, [steps[s]["lr"] for s in x])
    lr.set_ylabel("learning rate")
    speed.plot(x, [steps[s]["tokens_per_s"] for s in x])
    speed.set_ylabel("tokens/s")
    speed.set_xlabel("step")
    fig.suptitle(f"{run_dir.name}: {len(x)} steps, {sum(e['event'] == 'rollback' for e in events)} rollbacks")
    fig.tight_layout()
    fig.savefig(output, dpi=80)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="jobs.plot", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--output", type=Path, help="the PNG (default RUN_DIR/metrics.png)")
    args = parser.parse_args(argv)
    if not (args.run_dir / "metrics.jsonl").is_file():
        print(f"jobs.plot: error: {args.run_dir / 'metrics.jsonl'}: missing (not a run folder?)", file=sys.stderr)
        return 2
    output = args.output or args.run_dir / "metrics.png"
    plot(args.run_dir, output)
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
