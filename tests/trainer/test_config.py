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
