"""A rate window: at most `limit` starts in any `per` seconds, counted once per identity."""

from __future__ import annotations

import pytest

from workflow_manager.engine.ratewindow import RateWindow


@pytest.mark.parametrize(
    ("starts", "now", "room"),
    [
        ([], 0.0, True),
        ([0.0, 0.5], 1.0, True),  # 2 of 3
        ([0.0, 0.5, 1.0], 1.9, False),  # 3 in (-0.1, 1.9]
        ([0.0, 0.5, 1.0], 2.0, True),  # the start at 0.0 is out of (0.0, 2.0]: the edge is open
        ([0.0, 0.5, 1.0], 1.999, False),
    ],
)
def test_room_is_fewer_than_limit_starts_in_the_half_open_window(starts, now, room):
    window = RateWindow(limit=3, per=2.0)
    for i, at in enumerate(starts):
        window.record(at, f"s{i}")
    assert window.has_room(now) is room


def test_the_next_start_may_go_at_the_oldest_of_the_last_limit_plus_per():
    window = RateWindow(limit=2, per=10.0)
    for i, at in enumerate([1.0, 3.0, 4.0]):
        window.record(at, f"s{i}")
    assert [at for at, _ in window.starts] == [3.0, 4.0]  # only the last `limit` are kept
    assert window.free_at(5.0) == 13.0
    assert window.free_at(20.0) == 20.0
    assert window.free_at(5.0, limit=1) == 14.0  # a smaller share of the limit waits longer


def test_the_same_start_recorded_twice_counts_once():
    window = RateWindow(limit=2, per=10.0)
    assert window.record(1.0, "job:step:1")
    assert not window.record(1.0, "job:step:1")
    assert window.has_room(2.0)
    assert window.record(2.0, "job:step:2")
    assert not window.has_room(3.0)


def test_history_out_of_order_is_kept_sorted_and_a_start_too_old_to_matter_is_dropped():
    window = RateWindow(limit=2, per=10.0)
    window.record(5.0, "b")
    window.record(3.0, "a")
    assert [who for _, who in window.starts] == ["a", "b"]
    assert not window.record(1.0, "older")  # full, and older than every start kept
    assert window.free_at(6.0) == 13.0


def test_an_idle_window_forgets_its_starts():
    window = RateWindow(limit=2, per=10.0)
    window.record(1.0, "a")
    assert not window.is_idle(10.9)
    assert window.is_idle(11.0)
    window.forget_before(11.0)
    assert not window.starts
    assert window.record(1.0, "a")  # forgotten identities are forgotten too
