"""The guard's decisions on loss curves and stretches of bad data: a falling loss is no spike, a jump is;
non-finite values are refused; rollbacks past the limit stop the run; a bad stretch of any length is found
by O(log B) probes, or by skips doubling when spikes come again right after one; the lowered learning rate
and its ramp; the state round-trips."""

import math

import pytest

from trainer.guard import Guard, GuardConfig, TooManyRollbacks

BATCH = 8


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


def test_the_max_nonfinite_th_non_finite_step_in_a_row_is_a_spike_and_an_applied_one_or_a_rollback_resets():
    guard = fed([5.0] * 4, max_nonfinite=3)
    for _ in range(2):
        assert guard.verdict(math.nan) == "nonfinite" and guard.nonfinite_verdict() == "nonfinite"
        guard.not_applied()
    assert guard.verdict(math.inf) == "spike" and guard.nonfinite_verdict() == "spike"  # the gradient's alike
    guard.applied(5.0)
    assert guard.verdict(math.nan) == "nonfinite"
    guard.not_applied(), guard.not_applied()
    guard.count_rollback(10)
    assert guard.verdict(math.nan) == "nonfinite" and guard.nonfinite == 4
    with pytest.raises(ValueError, match="max_nonfinite >= 1"):
        GuardConfig(max_nonfinite=0)


def test_no_spike_is_judged_before_warmup_and_a_flat_loss_needs_the_minimum_rise():
    guard = fed([5.0] * 10, warmup=16)
    assert guard.verdict(50.0) is None  # too early to tell
    flat = fed([5.0] * 20)
    assert flat.verdict(5.3) is None and flat.verdict(5.6) == "spike"  # changes are 0: spike_rise decides


def test_far_judges_against_the_window_it_is_given_and_the_reference_prefers_the_checkpoints():
    guard = Guard(GuardConfig())
    assert guard.far(7.0, [5.0, 5.1, 4.9, 5.0]) and not guard.far(5.2, [5.0, 5.1, 4.9, 5.0])
    assert guard.far(math.inf, [5.0] * 4) and not guard.far(9.0, [])
    assert guard.reference([5.0] * 4, [4.0] * 9) == [5.0] * 4  # the restored weights' own losses
    assert guard.reference([5.0] * 3, [4.0] * 9) == [4.0] * 9  # too few: those before the spike


def test_rollbacks_past_the_limit_stop_the_run_and_the_state_round_trips():
    guard = Guard(GuardConfig(max_rollbacks=2, rollback_window=100))
    guard.count_rollback(10)
    guard.count_rollback(50)
    with pytest.raises(TooManyRollbacks, match="3 loss spikes .* steps 10, 50, 90"):
        guard.count_rollback(90)
    spaced = Guard(GuardConfig(max_rollbacks=1, rollback_window=100))
    spaced.count_rollback(10)
    spaced.count_rollback(200)  # the first is out of the window
    spaced.applied(4.5)
    spaced.skipped(80, 120, BATCH)
    spaced.calm_down(30, 41, 160)
    again = Guard(GuardConfig())
    again.load_state_dict(spaced.state_dict())
    assert again.state_dict() == spaced.state_dict() and again.rollbacks == [10, 200]
    assert again.lr_factor(35) == spaced.lr_factor(35) < 1


def find(stretch: range, served: int, floor: int = 1, probes: int = 16) -> tuple[int, list]:
    guard = Guard(GuardConfig(probe_batches=probes))
    return guard.stretch_end(served, BATCH, floor, lambda position: position // BATCH in stretch)


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 16, 17, 64, 100])
def test_probing_finds_the_end_of_a_contiguous_stretch_in_log_probes(length):
    first = 30
    end, probed = find(range(first, first + length), first * BATCH)
    assert end == (first + length) * BATCH  # every bad batch, no clean one
    assert len(probed) <= 2 * math.ceil(math.log2(length + 1)) + 1, probed
    assert all(bad == (position // BATCH < first + length) for position, bad in probed)


def test_without_probes_the_skip_is_the_floor_and_a_spike_right_after_doubles_it():
    guard = Guard(GuardConfig(probe_batches=0))
    served, skipped = 30 * BATCH, []
    for _ in range(7):  # a stretch of 64 batches: 1 + 2 + 4 + ... + 64 >= 64 in seven rollbacks
        floor = guard.skip_floor(served, BATCH)
        end, probed = guard.stretch_end(served, BATCH, floor, lambda _: pytest.fail("no probe"))
        guard.skipped(served, end, BATCH)
        skipped.append((end - served) // BATCH)
        served = end  # the next bad batch is the first after the skip
    assert skipped == [1, 2, 4, 8, 16, 32, 64] and served >= (30 + 64) * BATCH
    assert guard.skip_floor(served + 200 * BATCH, BATCH) == 1  # far after the stretch: a new one


def test_a_floor_is_skipped_whatever_the_probes_say_and_probes_run_out():
    end, probed = find(range(30, 31), 30 * BATCH, floor=4)  # one bad batch, but the last skip was 2 wide
    assert end == 34 * BATCH and [p for p, _ in probed] == [34 * BATCH]
    end, probed = find(range(30, 1000), 30 * BATCH, probes=3)  # out of probes: the next doubling, untested
    assert end == 38 * BATCH and len(probed) == 3


def test_a_hole_in_the_stretch_ends_the_skip_early_and_the_spike_after_it_widens_the_next():
    bad = set(range(30, 34)) | set(range(35, 40))  # a clean batch at 34
    guard = Guard(GuardConfig())
    end, _ = guard.stretch_end(30 * BATCH, BATCH, 1, lambda position: position // BATCH in bad)
    guard.skipped(30 * BATCH, end, BATCH)
    assert end in (34 * BATCH, 35 * BATCH)
    assert guard.skip_floor(35 * BATCH, BATCH) == 2 * (end // BATCH - 30)  # came again right after it


def test_the_lowered_learning_rate_holds_then_ramps_back_and_lowers_again_inside():
    guard = Guard(GuardConfig(calm_lr_factor=0.25, calm_steps=10, calm_ramp_steps=4))
    assert guard.calm_down(20, 27, 108) == 0.25
    assert guard.replayed(108) and not guard.replayed(112)  # the same batch spiking again is data after all
    assert [guard.lr_factor(s) for s in (19, 20, 36)] == [1.0, 0.25, 0.25]
    ramp = [guard.lr_factor(s) for s in range(37, 42)]
    assert ramp == sorted(ramp) and 0.25 < ramp[0] < ramp[-2] < 1.0 and ramp[-1] == 1.0
    assert guard.calm_down(30, 38, 152) == pytest.approx(guard.cfg.calm_lr_factor * ramp[1])  # again, while ramping


def test_a_spike_is_the_optimizer_only_when_the_weights_broke_and_the_batch_is_normal_on_the_restored_ones():
    guard = fed([5.0 - 0.01 * i for i in range(20)])
    before, early = list(guard.recent), [6.9, 6.8, 6.8, 6.7]  # an early checkpoint: barely trained
    # random tokens on barely trained weights score as text does, but the weights that spiked were sound
    assert guard.blame(7.0, early, weights_loss=4.8, before=before, served=80) == "data"
    assert guard.blame(7.0, early, weights_loss=None, before=before, served=80) == "data"  # nothing to ask
    # one blown step: the batch it was trained on now scores far above, the spiking batch is normal after
    assert guard.blame(6.9, early, weights_loss=60.0, before=before, served=80) == "optimizer"
    assert guard.blame(9.0, early, weights_loss=60.0, before=before, served=80) == "data"  # far on both
    assert Guard(GuardConfig(diagnose=False)).blame(6.9, early, 60.0, before, 80) == "data"
    guard.calm_down(10, 20, served=80)  # blamed on the optimizer once: the same batch again is the data
    assert guard.blame(6.9, early, weights_loss=60.0, before=before, served=80) == "data"
