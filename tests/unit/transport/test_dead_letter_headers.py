"""A dead letter's headers fit one AMQP frame, whatever the message it copies carried."""

from __future__ import annotations

from pamqp import encode

from workflow_manager.transport.deadletter import (
    HEADER_DEAD_DROPPED,
    HEADER_DEAD_REASON,
    dead_letter_headers,
)

FRAME_BYTES = 131_072  # RabbitMQ's default frame_max


def test_small_headers_are_kept_whole_with_the_reason():
    headers = dead_letter_headers({"workflow": "w", "x-attempt": 2}, "why", "q", 1.5)
    assert headers == {
        "workflow": "w",
        "x-attempt": 2,
        "x-dead-reason": "why",
        "x-dead-from": "q",
        "x-dead-at": 1.5,
    }


def test_a_long_reason_is_cut_and_says_how_long_it_was():
    headers = dead_letter_headers({}, "x" * 70_000, "q", 0.0)
    reason = headers[HEADER_DEAD_REASON]
    assert len(reason) < 2_100 and reason.endswith("(cut: 70000 characters in all)")


def test_headers_near_the_frame_size_are_dropped_largest_first_and_named():
    original = {"workflow": "w", "junk": "j" * 130_900, "x-delay": "9" * 70_000}
    headers = dead_letter_headers(original, "r" * 70_000, "q", 0.0)
    assert headers["workflow"] == "w" and "junk" not in headers and "x-delay" not in headers
    assert headers[HEADER_DEAD_DROPPED] == "junk, x-delay"
    assert len(encode.field_table(headers)) < FRAME_BYTES // 2


def test_what_fits_the_budget_is_kept_beside_a_dropped_giant():
    original = {"a": "1" * 30_000, "b": "2" * 30_000, "c": "3" * 100_000}
    headers = dead_letter_headers(original, "why", "q", 0.0)
    assert headers["a"] == original["a"] and headers["b"] == original["b"]
    assert headers[HEADER_DEAD_DROPPED] == "c"
