"""Worker replies: those that answer nothing are ignored, bad bodies and x-error fail the step."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.unit.engine.helpers import (
    AT_REPLY,
    JOB,
    NOT_A_JOB,
    OTHER_JOB,
    assert_ignored,
    cid,
    dispatches,
    effects,
    finished,
    make_state,
    reply,
    snapshot,
    submit,
)
from workflow_manager.engine import (
    EngineState,
    Ignored,
    JobStatus,
    NotifyOutcome,
    StepStatus,
    Subject,
)

FLOW = """
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
      - name: side
      - name: fan
        task: t
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
"""


def _running() -> EngineState:
    """JOB with a, side and fan running (fan's one child waits on leaf), b waiting."""
    state = make_state(FLOW)
    submit(state, "w", {"items": [1]})
    return state


def _a_done() -> EngineState:
    state = _running()
    reply(state, cid(JOB, "a"), {"x": 1})
    return state


def _completed() -> EngineState:
    state = make_state(FLOW)
    commands = submit(state, "w", {"items": []})
    for d in dispatches(commands):
        reply(state, d.correlation_id, {})
    reply(state, cid(JOB, "b"), {})
    assert state.jobs[JOB].status is JobStatus.COMPLETED
    return state


def _failed() -> EngineState:
    state = _running()
    reply(state, cid(JOB, "side"), error="boom")
    assert state.jobs[JOB].status is JobStatus.FAILED
    return state


IGNORED: list[tuple[str, Callable[[], EngineState], str, int | None]] = [
    ("unknown job", _running, cid(NOT_A_JOB, "a"), None),
    ("unknown job, not even a uuid", _running, "nonsense:a", None),
    ("unknown step", _running, cid(JOB, "nope"), None),
    ("step of another workflow's shape", _running, cid(JOB, "leaf"), None),
    ("unknown step with a colon in its name", _running, f"{JOB}:a:1", None),
    ("step still waiting", _running, cid(JOB, "b"), None),
    ("step already completed (duplicate)", _a_done, cid(JOB, "a"), None),
    ("duplicate with its attempt", _a_done, cid(JOB, "a"), 1),
    ("a task step's own name", _running, cid(JOB, "fan"), None),
    ("wrong attempt: 2", _running, cid(JOB, "a"), 2),
    ("wrong attempt: 0", _running, cid(JOB, "a"), 0),
    ("late reply after the job completed", _completed, cid(JOB, "a"), None),
    ("late reply to a step of a failed job", _failed, cid(JOB, "a"), None),
    ("reply to the failed step again", _failed, cid(JOB, "side"), None),
    ("another job's id", _running, cid(OTHER_JOB, "a"), None),
]


@pytest.mark.parametrize(
    ("build", "correlation_id", "attempt"),
    [case[1:] for case in IGNORED],
    ids=[case[0] for case in IGNORED],
)
@pytest.mark.parametrize(
    "body", [b'{"ok": true}', b"not json", b"[]"], ids=["object", "garbage", "list"]
)
@pytest.mark.parametrize("error", [None, "boom"], ids=["no-error", "x-error"])
def test_a_reply_that_answers_no_running_step_changes_nothing(
    build, correlation_id, attempt, body, error
):
    state = build()
    before = snapshot(state)
    commands = reply(state, correlation_id, body, error=error, attempt=attempt)
    ignored = assert_ignored(state, commands, before)
    assert ignored.subject == correlation_id
    job_id = correlation_id.partition(":")[0]
    known = job_id == JOB
    assert commands[0] == Subject(job_id, JOB if known else None)


def test_a_reply_naming_the_job_in_upper_case_finds_it():
    state = _running()
    commands = reply(state, cid(JOB.upper(), "a"), {"x": 1})
    assert [d.step for d in dispatches(commands)] == ["b"]
    assert commands[0] == Subject(JOB, JOB)  # filed under the job's canonical id


def test_a_reply_with_the_right_attempt_is_accepted():
    state = _running()
    commands = reply(state, cid(JOB, "a"), {"x": 1}, attempt=1)
    assert [d.step for d in dispatches(commands)] == ["b"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"[]", "got a list"),
        (b'[{"a": 1}]', "got a list"),
        (b'"text"', "got a string"),
        (b"42", "got a number"),
        (b"-1.5", "got a number"),
        (b"null", "got null"),
        (b"true", "got a boolean"),
        (b"{", "not valid JSON"),
        (b'{"a": 1} trailing', "not valid JSON"),
        (b"{'a': 1}", "not valid JSON"),
        (b"NaN", "NaN"),
        (b'{"a": NaN}', "NaN"),
        (b'{"a": Infinity}', "Infinity"),
        (b'{"a": -Infinity}', "Infinity"),
        (b'{"a": 1e999}', "out of range"),
        (b"\xff\xfe", "not UTF-8"),
        (b"\x80", "not UTF-8"),
        ('{"a": "caf\u00e9"}'.encode("latin-1"), "not UTF-8"),
        ('{"a": 1}'.encode("utf-16"), "not UTF-8"),
        ('{"a": 1}'.encode("utf-32"), "not UTF-8"),
        (b"[" * 100_000, "JSON"),
    ],
)
def test_a_body_that_is_not_a_json_object_fails_the_step_and_the_job(body, says):
    state = _running()
    commands = reply(state, cid(JOB, "a"), body)
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.result is None
    assert done.error is not None
    assert done.error["step"] == "a"
    assert says in done.error["message"]
    assert set(done.error) == {"step", "message"}
    assert dispatches(commands) == []
    job = state.jobs[JOB]
    assert job.status is JobStatus.FAILED
    assert job.result is None
    assert job.error == done.error
    assert job.steps["a"].status is StepStatus.FAILED
    assert job.steps["a"].error == done.error["message"]
    assert job.steps["b"].status is StepStatus.PENDING


def test_a_bad_body_message_quotes_a_preview_of_the_body():
    state = _running()
    commands = reply(state, cid(JOB, "a"), b"[1, 2, 3]")
    assert "[1, 2, 3]" in finished(commands).error["message"]


@pytest.mark.parametrize("body", [b'{"fine": 1}', b"", b"not json"])
def test_an_x_error_header_fails_the_step_with_its_message_whatever_the_body(body):
    state = _running()
    commands = reply(state, cid(JOB, "a"), body, error="disk full on worker-3")
    done = finished(commands)
    assert (done.job_id, done.root_id, done.workflow, done.flow, done.parent_id) == (
        JOB,
        JOB,
        "w",
        "w",
        None,
    )
    assert (done.status, done.result, done.error, done.at) == (
        "failed",
        None,
        {"step": "a", "message": "disk full on worker-3"},
        AT_REPLY,
    )


def test_an_empty_x_error_still_fails_the_step_with_a_message():
    state = _running()
    done = finished(reply(state, cid(JOB, "a"), b"{}", error=""))
    assert done.status == "failed"
    assert done.error["step"] == "a"
    assert done.error["message"]


def test_a_failed_job_dispatches_nothing_more_and_ignores_its_running_steps():
    state = _running()
    reply(state, cid(JOB, "a"), error="boom")
    before = snapshot(state)
    for step in ["side", "a", "b"]:
        commands = reply(state, cid(JOB, step), {"late": True})
        assert_ignored(state, commands, before)


def test_the_failure_is_sent_to_every_reply_to():
    state = make_state(FLOW)
    submit(state, "w", {"items": []}, reply_to="q1")
    submit(state, "w", {"items": []}, reply_to="q2")
    commands = reply(state, cid(JOB, "side"), b"[]")
    error = finished(commands).error
    outcomes = [c for c in commands if isinstance(c, NotifyOutcome)]
    assert outcomes == [
        NotifyOutcome("q1", JOB, JOB, "failed", {"error": error}),
        NotifyOutcome("q2", JOB, JOB, "failed", {"error": error}),
    ]


def test_ignored_reasons_say_why():
    state = _a_done()
    reasons = {
        "duplicate": reply(state, cid(JOB, "a"), {}),
        "no job": reply(state, cid(NOT_A_JOB, "a"), {}),
        "no step": reply(state, cid(JOB, "zz"), {}),
        "task step": reply(state, cid(JOB, "fan"), {}),
        "attempt": reply(state, cid(JOB, "b"), {}, attempt=3),
    }
    for word, commands in reasons.items():
        (ignored,) = effects(commands)
        assert isinstance(ignored, Ignored)
        assert word in ignored.reason, (word, ignored.reason)


def test_reply_bodies_round_trip_any_json_object():
    state = _running()
    value = {"nested": {"list": [1, 2.5, "s", None, True, {"deep": []}]}, "empty": {}}
    reply(state, cid(JOB, "a"), json.dumps(value).encode())
    assert state.jobs[JOB].steps["a"].output == value
