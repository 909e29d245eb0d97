"""The fair split of a cluster-wide limit between partitions (`cluster.quotasplit`)."""

from __future__ import annotations

import itertools

import pytest

from workflow_manager.cluster.quotasplit import fair_split, want_of


def test_a_want_is_the_use_and_the_waiting_work_up_to_the_limit():
    assert want_of(10, 2, 3) == 5
    assert want_of(4, 2, 3) == 4
    assert want_of(4, 0, 0) == 0


def test_one_partition_wanting_gets_what_it_wants_up_to_the_limit():
    assert fair_split({0: 5, 1: 0, 2: 0}, 3) == {0: 3, 1: 0, 2: 0}
    assert fair_split({0: 2, 1: 0}, 3) == {0: 2, 1: 0}


def test_equal_wants_share_equally_and_the_remainder_goes_to_the_lowest_partitions():
    assert fair_split({0: 10, 1: 10, 2: 10}, 9) == {0: 3, 1: 3, 2: 3}
    assert fair_split({0: 10, 1: 10, 2: 10}, 10) == {0: 4, 1: 3, 2: 3}


def test_what_a_small_want_leaves_goes_to_those_wanting_more():
    assert fair_split({0: 1, 1: 10, 2: 10}, 9) == {0: 1, 1: 4, 2: 4}
    assert fair_split({0: 1, 1: 2, 2: 10}, 9) == {0: 1, 1: 2, 2: 6}


def test_every_wanting_partition_gets_one_while_the_limit_covers_them():
    assert fair_split({0: 50, 3: 1, 5: 1}, 3) == {0: 1, 3: 1, 5: 1}


def test_a_limit_smaller_than_the_wanting_partitions_goes_to_the_lowest():
    assert fair_split({4: 5, 1: 5, 2: 5}, 2) == {1: 1, 2: 1, 4: 0}
    assert fair_split({4: 5, 1: 5, 2: 5}, 2, turn=1) == {1: 0, 2: 1, 4: 1}
    assert fair_split({4: 5, 1: 5, 2: 5}, 2, turn=5) == {1: 1, 2: 0, 4: 1}


def test_nobody_wanting_gets_nothing():
    assert fair_split({0: 0, 1: 0}, 5) == {0: 0, 1: 0}
    assert fair_split({}, 5) == {}


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 50])
def test_parts_never_exceed_the_limit_nor_a_want_and_use_what_is_wanted(limit):
    for wants in itertools.product([0, 1, 2, 5, 60], repeat=4):
        split = fair_split(dict(enumerate(wants)), limit)
        assert sum(split.values()) <= limit
        assert all(0 <= split[p] <= wants[p] for p in range(4))
        # Water-filling wastes nothing: either the limit is used or every want is met.
        assert sum(split.values()) == min(limit, sum(wants))
        wanting = [p for p in range(4) if wants[p]]
        if limit >= len(wanting):
            assert all(split[p] >= 1 for p in wanting)
        # Max-min fair: a partition below another's part wants no more than it has.
        for p, q in itertools.permutations(range(4), 2):
            if split[p] + 1 < split[q]:
                assert split[p] == wants[p]
