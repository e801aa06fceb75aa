"""Which ranks are slower than the others: against the median of the other ranks, so that with two ranks the
slow one is not compared with a median halfway to itself."""

from trainer.stragglers import slower_than_the_others


def test_of_two_ranks_the_one_30_percent_slower_is_named_at_a_20_percent_share():
    assert slower_than_the_others([1.0, 1.3], 0.2) == [False, True]  # everyone's median 1.15: 13% only
    assert slower_than_the_others([1.0, 1.1], 0.2) == [False, False]


def test_among_many_ranks_only_the_slow_one_and_one_rank_alone_is_never_slow():
    assert slower_than_the_others([1.0, 1.02, 0.98, 1.5, 1.01], 0.2) == [False, False, False, True, False]
    assert slower_than_the_others([1.0, 1.0, 2.0, 2.0], 0.2) == [False, False, True, True]  # two slow nodes
    assert slower_than_the_others([9.0], 0.2) == [False]


def test_each_rank_is_compared_with_the_median_of_the_others():
    from trainer.stragglers import others_medians

    assert others_medians([1.0, 1.3]) == [1.3, 1.0] and others_medians([2.0]) == [2.0]
    assert others_medians([1.0, 2.0, 3.0, 10.0]) == [3.0, 3.0, 2.0, 2.0]
