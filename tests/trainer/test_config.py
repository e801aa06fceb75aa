"""The training settings are checked before anything starts: NaN passes every `x <= 0` check (grad_clip NaN
left the guard's norm finite and made every weight NaN after one step; lr NaN was a traceback from AdamW)."""

import math

import pytest

from trainer.config import TrainConfig


@pytest.mark.parametrize("setting", ["lr", "grad_clip", "weight_decay"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_a_rate_or_a_bound_that_is_not_a_finite_number_in_range_is_refused_by_name(setting, value):
    with pytest.raises(ValueError, match=setting):
        TrainConfig(**{setting: value})
    TrainConfig(**{setting: 0.5})  # in range: taken


@pytest.mark.parametrize("settings, message", [
    ({"global_batch_size": 10**12}, "global_batch_size must be in"),
    ({"num_workers": 10**6}, "num_workers must be at most"),
])
def test_counts_past_what_a_node_holds_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**settings)


def test_a_guard_window_or_a_collective_timeout_past_their_bounds_is_refused():
    from trainer.guard import MAX_WINDOW, GuardConfig
    from trainer.nccl import MAX_TIMEOUT_S, NcclConfig

    GuardConfig(window=MAX_WINDOW)
    with pytest.raises(ValueError, match="window in 4-"):
        GuardConfig(window=MAX_WINDOW + 1)
    NcclConfig(timeout_s=MAX_TIMEOUT_S)
    with pytest.raises(ValueError, match="timeout_s in 1-"):
        NcclConfig(timeout_s=10**18)


@pytest.mark.parametrize("name", ["../x", "a/b", "", "x" * 101])
def test_a_benchmark_name_from_a_file_is_held_to_the_flags_rule(name):
    """Found by review (2026-12-07): `--benchmark ../x=PATH` was refused, `eval.benchmarks: {../x: PATH}` taken."""
    from trainer.benchmarks import BenchmarksConfig

    with pytest.raises(ValueError, match="benchmark"):
        BenchmarksConfig(benchmarks={name: "items.jsonl"})
    BenchmarksConfig(benchmarks={"mmlu": "items.jsonl"})
