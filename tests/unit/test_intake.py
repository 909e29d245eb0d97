"""Intake: deliveries to engine events, or why they cannot be one (pure, no broker)."""

from __future__ import annotations

import pytest

from workflow_manager.intake import Undeliverable, reply_event, trigger_event
from workflow_manager.transport import Delivery

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"


def _reply(body: bytes = b"{}", headers=None, correlation_id: str | None = f"{JOB}:s"):
    return Delivery("wm", body, correlation_id, None, headers or {})


def _trigger(body: bytes = b"{}", headers=None, correlation_id=None, reply_to=None):
    return Delivery("wm.jobs", body, correlation_id, reply_to, headers or {})


@pytest.mark.parametrize(
    ("headers", "error", "attempt"),
    [
        ({}, None, None),
        ({"x-error": "disk full", "x-attempt": 2}, "disk full", 2),
        ({"x-error": b"bytes too", "x-attempt": b"3"}, "bytes too", 3),
        ({"x-attempt": "not a number"}, None, None),
        ({"x-attempt": True}, None, None),
        ({"x-attempt": 2**40}, None, None),
        ({"x-error": ""}, "", None),
    ],
)
def test_reply_headers(headers, error, attempt):
    event = reply_event(_reply(headers=headers), 1.0, max_bytes=100)
    assert (event.error, event.attempt) == (error, attempt)
    assert (event.job_id, event.step, event.correlation_id) == (JOB, "s", f"{JOB}:s")


def test_the_correlation_id_is_split_at_the_first_colon():
    event = reply_event(_reply(correlation_id=f"{JOB}:a:b"), 1.0, max_bytes=100)
    assert (event.job_id, event.step) == (JOB, "a:b")


def test_oversized_reply_becomes_an_error_naming_the_size():
    event = reply_event(_reply(body=b"x" * 101), 1.0, max_bytes=100)
    assert event.body == b""
    assert event.error == "reply body is 101 bytes; the limit is 100"


@pytest.mark.parametrize("correlation_id", [None, "", "no-colon", ":step", f"{JOB}:"])
def test_a_reply_whose_correlation_id_names_no_step_is_undeliverable(correlation_id):
    result = reply_event(_reply(correlation_id=correlation_id), 1.0, max_bytes=100)
    assert isinstance(result, Undeliverable)
    assert "expected '<job-uuid>:<step-name>'" in result.reason
    assert repr(correlation_id) in result.reason


def test_trigger_decodes_payload_id_and_reply_to():
    delivery = _trigger(b'{"a": 1}', {"workflow": b"wf"}, "id-1", "replies")
    event = trigger_event(delivery, 5.0, new_id="generated", max_bytes=100)
    assert (event.job_id, event.workflow, event.payload, event.reply_to, event.at) == (
        "id-1", "wf", {"a": 1}, "replies", 5.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("headers", "not_before"),
    [
        ({}, None),
        ({"x-delay": 2}, 7.0),
        ({"x-delay": b"0.5"}, 5.5),
        ({"x-not-before": "1970-01-01T00:01:00Z"}, 60.0),
        ({"x-not-before": 99}, 99.0),
    ],
)
def test_trigger_delay_headers_set_the_start_time(headers, not_before):
    delivery = _trigger(b"{}", {"workflow": "wf", **headers})
    event = trigger_event(delivery, 5.0, new_id="gen", max_bytes=100)
    assert event.not_before == not_before


def test_trigger_without_id_gets_the_new_one_and_empty_body_is_empty_payload():
    event = trigger_event(_trigger(b"", {"workflow": "wf"}), 5.0, new_id="gen", max_bytes=100)
    assert (event.job_id, event.payload) == ("gen", {})


@pytest.mark.parametrize(
    ("delivery", "fragment"),
    [
        (_trigger(b"{}", {}), "no 'workflow' header"),
        (_trigger(b"{oops", {"workflow": "wf"}), "not valid JSON"),
        (_trigger(b"[" * 100_000, {"workflow": "wf"}), "trigger body is"),
        (_trigger(b"\xff\xfe", {"workflow": "wf"}), "not UTF-8"),
        (_trigger(b'{"a": NaN}', {"workflow": "wf"}), "not valid JSON"),
        (_trigger(b"{}", {"workflow": "wf", "x-delay": "soon"}), "header 'x-delay' must be"),
        (_trigger(b"{}", {"workflow": "wf", "x-delay": -3}), "header 'x-delay' must be"),
        (
            _trigger(b"{}", {"workflow": "wf", "x-not-before": b"noon"}),
            "header 'x-not-before' must be an RFC 3339 time",
        ),
    ],
)
def test_bad_triggers_say_why(delivery, fragment):
    result = trigger_event(delivery, 1.0, new_id="gen", max_bytes=50_000)
    assert isinstance(result, Undeliverable)
    assert fragment in result.reason


@pytest.mark.parametrize(
    ("headers", "priority"),
    [({}, 0), ({"x-priority": 9}, 9), ({"x-priority": b"3"}, 3), ({"x-priority": " 0 "}, 0)],
)
def test_a_trigger_priority_comes_from_its_x_priority_header(headers, priority):
    headers = {"workflow": "w", **headers}
    event = trigger_event(_trigger(headers=headers), 1.0, JOB, max_bytes=100)
    assert event.priority == priority


@pytest.mark.parametrize("value", [10, -1, "high", "2.5", True, b""])
def test_a_bad_x_priority_header_is_undeliverable_naming_the_header(value):
    headers = {"workflow": "w", "x-priority": value}
    event = trigger_event(_trigger(headers=headers), 1.0, JOB, max_bytes=100)
    assert isinstance(event, Undeliverable)
    assert "'x-priority' must be an integer from 0 to 9" in event.reason


@pytest.mark.parametrize("value", ['{"tenant": "acme"}', b'{"tenant": "acme"}'])
def test_a_trigger_meta_comes_from_its_x_meta_header(value):
    event = trigger_event(_trigger(headers={"workflow": "w", "x-meta": value}), 1.0, JOB, 100)
    assert event.meta == {"tenant": "acme"}
    assert trigger_event(_trigger(headers={"workflow": "w"}), 1.0, JOB, 100).meta is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("[1]", "must be a JSON object, got a list"), ("{", "is not valid JSON"), ("7", "a number")],
)
def test_a_bad_x_meta_header_is_undeliverable_naming_the_header(value, fragment):
    event = trigger_event(_trigger(headers={"workflow": "w", "x-meta": value}), 1.0, JOB, 100)
    assert isinstance(event, Undeliverable)
    assert event.reason.startswith("trigger header 'x-meta' ")
    assert fragment in event.reason


def test_a_reply_carries_its_x_meta_patch_as_sent():
    event = reply_event(_reply(headers={"x-meta-patch": b'{"a": 1}'}), 1.0, 100)
    assert event.meta_patch == '{"a": 1}'
    assert reply_event(_reply(), 1.0, 100).meta_patch is None


DEEP = b"[" * 990 + b"1" + b"]" * 990


@pytest.mark.parametrize("depth", [64, 128])
def test_json_nested_up_to_the_limit_is_read(depth):
    body = b'{"d": ' + b"[" * (depth - 1) + b"1" + b"]" * (depth - 1) + b"}"
    event = trigger_event(_trigger(body, {"workflow": "w"}), 1.0, JOB, 10_000)
    assert not isinstance(event, Undeliverable)
    assert reply_event(_reply(body), 1.0, 10_000).error is None


def test_a_trigger_nested_past_the_limit_is_undeliverable_naming_the_limit():
    event = trigger_event(_trigger(b'{"d": ' + DEEP + b"}", {"workflow": "w"}), 1.0, JOB, 10_000)
    assert isinstance(event, Undeliverable)
    assert "nested more than 128 levels deep" in event.reason
    assert "--max-json-depth" in event.reason


def test_the_depth_limit_is_the_one_given():
    body = b'{"d": ' + b"[" * 80 + b"]" * 80 + b"}"
    assert isinstance(trigger_event(_trigger(body, {"workflow": "w"}), 1.0, JOB, 10_000, "", 64),
                      Undeliverable)  # fmt: skip
    assert not isinstance(trigger_event(_trigger(body, {"workflow": "w"}), 1.0, JOB, 10_000),
                          Undeliverable)  # fmt: skip


@pytest.mark.parametrize(
    "headers", [{}, {"x-meta-patch": b'{"a": ' + DEEP + b"}"}], ids=["body", "meta-patch"]
)
def test_a_reply_nested_past_the_limit_becomes_its_steps_error(headers):
    body = DEEP if not headers else b"{}"
    event = reply_event(_reply(body, headers), 1.0, 10_000)
    assert event.body == b"" and event.meta_patch is None
    assert "nested more than 128 levels deep" in event.error


def test_an_x_meta_header_past_its_size_limit_is_undeliverable():
    value = '{"blob": "%s"}' % ("x" * 40_000)
    event = trigger_event(_trigger(headers={"workflow": "w", "x-meta": value}), 1.0, JOB, 100)
    assert isinstance(event, Undeliverable)
    assert "the limit is 32,768" in event.reason and "x-meta" in event.reason
