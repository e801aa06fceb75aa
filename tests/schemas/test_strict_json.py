"""Files tokenmill writes are JSON as its standard has it: a figure that is not a number (a non-finite
loss, the standard error of one benchmark item) is null, not the NaN Python writes and other readers refuse."""

import json
import math

from schemas import strict_json
from trainer.metrics import Metrics


def _strict(line: str):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(line, parse_constant=refuse)


def test_figures_that_are_not_numbers_are_null_at_any_depth_and_the_rest_unchanged():
    value = {"loss": math.nan, "up": math.inf, "down": [-math.inf, 1.5, (2, math.nan)], "n": 3, "s": "NaN",
             "deep": {"se": math.nan, "ok": 0.25}}
    assert _strict(strict_json.dumps(value)) == {"loss": None, "up": None, "down": [None, 1.5, [2, None]], "n": 3,
                                                 "s": "NaN", "deep": {"se": None, "ok": 0.25}}
    assert "NaN" not in json.dumps(strict_json.finite({"a": math.nan}))


def test_a_benchmark_of_one_item_and_a_non_finite_loss_leave_metrics_jsonl_readable_by_strict_readers(tmp_path):
    path = tmp_path / "metrics.jsonl"
    with Metrics(path, flops_per_token=1.0, peak=None, world=1) as metrics:
        metrics.benchmarks(10, {"one": {"acc": 1.0, "acc_se": math.nan, "acc_norm": 1.0, "acc_norm_se": math.nan,
                                        "items": 1, "chance": 0.25}})
        metrics.event("nonfinite", 11, loss=math.nan)
    lines = [_strict(line) for line in path.read_text().splitlines()]
    assert lines[0]["benchmarks"]["one"]["acc_se"] is None and lines[0]["benchmarks"]["one"]["acc"] == 1.0
    assert lines[1] == {"event": "nonfinite", "at_step": 11, "loss": None}
