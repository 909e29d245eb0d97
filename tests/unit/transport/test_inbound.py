"""Decoding inbound messages into engine events (pure: a stand-in message, no broker)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from manager.transport import TriggerError, reply_event, trigger_event


@dataclass
class Message:
    """The few attributes of an aio-pika incoming message that decoding reads."""

    body: bytes = b"{}"
    headers: dict[str, Any] = field(default_factory=dict)
    correlation_id: str | None = None
    reply_to: str | None = None


@pytest.mark.parametrize(
    ("headers", "error", "attempt"),
    [
        ({}, None, None),
        ({"x-error": "disk full", "x-attempt": 2}, "disk full", 2),
        ({"x-error": b"bytes too", "x-attempt": b"3"}, "bytes too", 3),
        ({"x-attempt": "not a number"}, None, None),
        ({"x-attempt": True}, None, None),
        ({"x-error": ""}, "", None),
    ],
)
def test_reply_headers(headers, error, attempt):
    event = reply_event(Message(headers=headers, correlation_id="j:s"), 1.0, max_bytes=100)
    assert (event.error, event.attempt, event.correlation_id) == (error, attempt, "j:s")


def test_oversized_reply_becomes_an_error_naming_the_size():
    event = reply_event(Message(body=b"x" * 101, correlation_id="j:s"), 1.0, max_bytes=100)
    assert event.body == b""
    assert event.error == "reply body is 101 bytes; the limit is 100"


def test_missing_correlation_id_is_an_empty_one():
    assert reply_event(Message(), 1.0, max_bytes=100).correlation_id == ""


def test_trigger_decodes_payload_id_and_reply_to():
    message = Message(b'{"a": 1}', {"workflow": b"wf"}, "id-1", "replies")
    event = trigger_event(message, 5.0, new_id="generated", max_bytes=100)
    assert (event.job_id, event.workflow, event.payload, event.reply_to, event.at) == (
        "id-1", "wf", {"a": 1}, "replies", 5.0,
    )  # fmt: skip


def test_trigger_without_id_gets_the_new_one_and_empty_body_is_empty_payload():
    event = trigger_event(Message(b"", {"workflow": "wf"}), 5.0, new_id="gen", max_bytes=100)
    assert (event.job_id, event.payload) == ("gen", {})


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        (Message(b"{}", {}), "no 'workflow' header"),
        (Message(b"{oops", {"workflow": "wf"}), "not valid JSON"),
        (Message(b"[" * 100_000, {"workflow": "wf"}), "trigger body is"),
        (Message(b"\xff\xfe", {"workflow": "wf"}), "not UTF-8"),
        (Message(b'{"a": NaN}', {"workflow": "wf"}), "not valid JSON"),
    ],
)
def test_bad_triggers_say_why(message, fragment):
    with pytest.raises(TriggerError, match=fragment):
        trigger_event(message, 1.0, new_id="gen", max_bytes=50_000)
