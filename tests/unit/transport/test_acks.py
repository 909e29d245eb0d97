"""Batched acks: a multiple-ack never covers a delivery still in hand."""

from __future__ import annotations

from workflow_manager.transport.acks import AckWindow


def _window(*tags: int) -> AckWindow:
    window = AckWindow()
    for tag in tags:
        window.received(tag)
    return window


def test_consecutive_due_tags_are_settled_by_one_multiple_ack():
    window = _window(1, 2, 3)
    for tag in (3, 1, 2):
        window.due(tag)
    assert window.take() == (3, [])
    assert len(window) == 0
    assert window.take() == (0, [])


def test_tags_above_one_in_hand_are_acked_one_by_one():
    window = _window(1, 2, 3, 4, 5)
    for tag in (1, 3, 5):
        window.due(tag)
    assert window.take() == (1, [3, 5])
    window.due(2)
    # 3 was acked singly already: the multiple-ack may pass over it, but must stop below 4.
    assert window.take() == (2, [])
    window.due(4)
    assert window.take() == (4, [])
    assert len(window) == 0


def test_a_delivery_never_acked_holds_back_multiple_acks_but_not_singles():
    window = _window(7, 8, 9)
    window.due(8)
    window.due(9)
    assert window.take() == (0, [8, 9])
    window.received(10)
    window.due(10)
    assert window.take() == (0, [10])
    assert len(window) == 1  # 7 is still in hand


def test_unknown_tags_are_ignored():
    window = _window(1)
    window.due(99)
    assert window.take() == (0, [])


def test_acks_behind_a_held_delivery_do_not_pile_up():
    window = _window(1)
    for tag in range(2, 10_002):
        window.received(tag)
        window.due(tag)
        assert window.take() == (0, [tag])
    assert len(window) == 1
    assert len(window._order) <= 1 + 2 + 1024  # rebuilt, not one entry per ack ever made
    window.due(1)
    assert window.take() == (1, [])
