"""Headers as text a person can read: what AMQP clients send besides strings (numbers, tables,
arrays, bytes, times) is never stored as a Python repr."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from workflow_manager.transport.message import header_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("disk full", "disk full"),
        (b"caf\xc3\xa9", "café"),
        (b"bad \xff byte", "bad \ufffd byte"),
        (bytearray(b"raw"), "raw"),
        (42, "42"),
        (2.5, "2.5"),
        (Decimal("1.50"), "1.50"),
        (True, "true"),
        (datetime(2026, 5, 1, 9, 0, tzinfo=UTC), "2026-05-01T09:00:00+00:00"),
        ({"code": 7, "why": "disk full"}, '{"code": 7, "why": "disk full"}'),
        ({"why": b"caf\xc3\xa9", "ok": False, "n": [1, Decimal("2.5")]},
         '{"why": "café", "ok": false, "n": [1, "2.5"]}'),
        (["a", 1, None], '["a", 1, null]'),
    ],
)  # fmt: skip
def test_a_header_of_any_amqp_type_reads_as_text(value: Any, text: str):
    assert header_text({"x-error": value}, "x-error") == text


def test_an_absent_header_is_none():
    assert header_text({}, "x-error") is None
    assert header_text(None, "x-error") is None
