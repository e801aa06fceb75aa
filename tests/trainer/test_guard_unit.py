"""The guard's decisions on loss curves: a falling loss is no spike, a jump is; non-finite values are
refused; rollbacks past the limit stop the run; the skipped stretch never reaches behind the checkpoint."""

import math

import pytest

from trainer.guard import Guard, GuardConfig, GuardState, TooManyRollbacks


def fed(losses, **settings) -> Guard:
    guard = Guard(GuardConfig(**settings))
    for loss in losses:
        assert guard.verdict(loss) is None, loss
        guard.applied(loss)
    return guard


def test_a_fast_falling_noisy_loss_is_no_spike_and_a_jump_is():
    falling = [7.0 - 0.1 * i + (0.15 if i % 3 == 0 else -0.1) for i in range(30)]
    guard = fed(falling)
    assert guard.verdict(falling[-1] + 0.3) is None  # an ordinary bad batch
    assert guard.verdict(falling[-1] + 2.0) == "spike"
    assert guard.verdict(math.nan) == "nonfinite" and not guard.gradient_ok(math.inf) and guard.gradient_ok(1.0)
    assert Guard(GuardConfig(enabled=False)).verdict(math.inf) is None


def test_no_spike_is_judged_before_warmup_and_a_flat_loss_needs_the_minimum_rise():
    guard = fed([5.0] * 10, warmup=16)
    assert guard.verdict(50.0) is None  # too early to tell
    flat = fed([5.0] * 20)
    assert flat.verdict(5.3) is None and flat.verdict(5.6) == "spike"  # changes are 0: spike_rise decides


def test_rollbacks_past_the_limit_stop_the_run_and_the_state_round_trips():
    guard = Guard(GuardConfig(max_rollbacks=2, rollback_window=100))
    guard.rollback(10)
    guard.rollback(50)
    with pytest.raises(TooManyRollbacks, match="3 loss spikes .* steps 10, 50, 90"):
        guard.rollback(90)
    spaced = Guard(GuardConfig(max_rollbacks=1, rollback_window=100))
    spaced.rollback(10)
    spaced.rollback(200)  # the first is out of the window
    again = GuardState.from_json(spaced.state.to_json())
    assert again == spaced.state and again.rollbacks == [10, 200]


def test_the_skipped_stretch_starts_at_the_checkpoint_at_the_earliest():
    guard = Guard(GuardConfig(skip_before=4))
    assert guard.skip_stretch(served=80, checkpoint_position=40, batch=8) == (48, 88)
    assert guard.skip_stretch(served=80, checkpoint_position=72, batch=8) == (72, 88)
