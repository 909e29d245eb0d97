"""Debounced triggers: within a window, triggers with one key make one job (leading: the first,
at once; trailing: when the window closes, with the last payload); the others are answered
`debounced` naming it; a closed window opens anew; replay rebuilds windows and payloads."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.engine.helpers import cancel, cid, fire, make_state, of_type, reply
from workflow_manager.engine import (
    Dispatch,
    EngineState,
    Event,
    JobDebounced,
    JobRejected,
    JobScheduled,
    JobsRecalled,
    JobStarted,
    JobStatus,
    JobSubmitted,
    RecalledJob,
    Subject,
    apply,
    replay,
)
from workflow_manager.engine.timers import job_start

FLOW = """
workflows:
  - name: leading
    debounce: {key: order, period: 2}
    steps: [{name: sync}]
  - name: trailing
    debounce: {key: order, period: 2, mode: trailing}
    steps: [{name: sync}]
  - name: by-tenant
    debounce: {key: meta.tenant, period: 5}
    unique: {key: order}
    steps: [{name: sync}]
"""


def _id(n: int) -> str:
    return str(uuid.UUID(int=n + 1, version=4))


def _trigger(state: EngineState, workflow: str, n: int, payload, at: float, meta=None):
    event = JobSubmitted(_id(n), workflow, payload, at, reply_to="answers", meta=meta)
    return event, apply(state, event)[1]


def test_leading_the_first_trigger_starts_the_job_and_the_rest_of_the_window_is_debounced():
    state = make_state(FLOW)
    _, first = _trigger(state, "leading", 0, {"order": 7}, at=10.0)
    assert of_type(first, JobStarted) and of_type(first, Dispatch)
    for n in range(1, 50):
        _, commands = _trigger(state, "leading", n, {"order": 7, "n": n}, at=10.0 + n * 0.039)
        (debounced,) = of_type(commands, JobDebounced)
        assert (debounced.existing, debounced.job_id, debounced.key) == (_id(0), _id(n), "7")
        assert debounced.reply_to == "answers" and debounced.mode == "leading"
        assert not of_type(commands, JobStarted) and not of_type(commands, Dispatch)
        # Journaled under the window's job, so its rows replay it.
        assert isinstance(commands[0], Subject) and commands[0].job_id == _id(0)
    assert list(state.jobs) == [_id(0)]
    assert state.jobs[_id(0)].payload == {"order": 7}  # leading: the first payload runs
    assert state.debounce["leading"]["7"].debounced == 49
    # Another key has a window of its own.
    _, other = _trigger(state, "leading", 99, {"order": 8}, at=10.5)
    assert of_type(other, JobStarted)


def test_leading_the_window_holds_after_its_job_ended_and_a_trigger_after_it_opens_a_new_one():
    state = make_state(FLOW)
    _trigger(state, "leading", 0, {"order": 7}, at=10.0)
    reply(state, cid(_id(0), "sync"), {}, at=10.5)
    assert state.jobs[_id(0)].status is JobStatus.COMPLETED
    _, commands = _trigger(state, "leading", 1, {"order": 7}, at=11.9)
    assert of_type(commands, JobDebounced)[0].existing == _id(0)
    # The window is fixed: 2 s from the first trigger, however many came since.
    _, commands = _trigger(state, "leading", 2, {"order": 7}, at=12.0)
    assert of_type(commands, JobStarted)[0].job_id == _id(2)
    assert state.debounce["leading"]["7"].job_id == _id(2)


def test_trailing_the_job_waits_for_the_window_end_and_runs_the_last_payload():
    state = make_state(FLOW)
    _, first = _trigger(state, "trailing", 0, {"order": 7, "v": 0}, at=10.0)
    (scheduled,) = of_type(first, JobScheduled)
    assert scheduled.start_at == 12.0 and not of_type(first, Dispatch)
    for n in range(1, 5):
        _, commands = _trigger(state, "trailing", n, {"order": 7, "v": n}, at=10.0 + n * 0.4)
        (debounced,) = of_type(commands, JobDebounced)
        assert (debounced.existing, debounced.ends_at, debounced.mode) == (_id(0), 12.0, "trailing")
    job = state.jobs[_id(0)]
    assert job.status is JobStatus.SCHEDULED and job.payload == {"order": 7, "v": 4}
    commands = fire(state, job_start(_id(0)), at=12.0)
    (request,) = of_type(commands, Dispatch)
    assert request.body == {"order": 7, "v": 4}
    assert "trailing" not in state.debounce  # its job started: the window left memory
    _, commands = _trigger(state, "trailing", 9, {"order": 7, "v": 9}, at=12.1)
    assert of_type(commands, JobScheduled)[0].start_at == pytest.approx(14.1)


def test_trailing_a_cancelled_held_job_frees_its_key():
    state = make_state(FLOW)
    _trigger(state, "trailing", 0, {"order": 7}, at=10.0)
    cancel(state, _id(0), at=10.5)
    assert state.jobs[_id(0)].status is JobStatus.CANCELLED
    _, commands = _trigger(state, "trailing", 1, {"order": 7}, at=10.6)
    assert of_type(commands, JobScheduled)[0].job_id == _id(1)


def test_a_key_read_from_metadata_and_debounce_answers_before_the_unique_key():
    state = make_state(FLOW)
    _trigger(state, "by-tenant", 0, {"order": 1}, at=1.0, meta={"tenant": "a"})
    # Same unique key, same window: debounced, not a duplicate.
    _, commands = _trigger(state, "by-tenant", 1, {"order": 1}, at=2.0, meta={"tenant": "a"})
    assert of_type(commands, JobDebounced)[0].key == '"a"'
    _, commands = _trigger(state, "by-tenant", 2, {"order": 2}, at=2.0, meta={"tenant": "b"})
    assert of_type(commands, JobStarted)


def test_a_key_that_cannot_be_read_refuses_the_trigger():
    state = make_state(
        """
workflows:
  - name: w
    debounce: {key: "abs(n)", period: 1}
    steps: [{name: s}]
"""
    )
    _, commands = _trigger(state, "w", 0, {"n": "text"}, at=1.0)
    (rejected,) = commands
    assert isinstance(rejected, JobRejected)
    assert "debounce.key of workflow 'w'" in rejected.reason
    assert not state.jobs and not state.debounce


def test_closed_windows_leave_memory():
    state = make_state(FLOW)
    for n in range(20):
        _trigger(state, "leading", n, {"order": n}, at=1.0 + n * 0.01)
    assert len(state.debounce["leading"]) == 20
    _trigger(state, "leading", 50, {"order": "late"}, at=10.0)
    assert list(state.debounce["leading"]) == ['"late"']
    reply(state, cid(_id(50), "sync"), {}, at=20.0)
    assert "leading" not in state.debounce


def test_replaying_the_events_rebuilds_windows_and_the_last_payload():
    live = make_state(FLOW)
    events: list[Event] = []
    for n, (workflow, order, at) in enumerate(
        [
            ("trailing", 1, 1.0),
            ("leading", 1, 1.1),
            ("trailing", 1, 1.5),
            ("leading", 1, 1.6),
            ("trailing", 2, 1.7),
            ("trailing", 1, 2.9),
        ]  # fmt: skip
    ):
        event, _ = _trigger(live, workflow, n, {"order": order, "n": n}, at=at)
        events.append(event)
    rebuilt = replay(make_state(FLOW), events)
    assert rebuilt.debounce == live.debounce
    assert rebuilt.jobs[_id(0)].payload == {"order": 1, "n": 5}
    assert rebuilt.timers == live.timers
    # The job then starts with the last payload, as it would have live.
    (request,) = of_type(fire(rebuilt, job_start(_id(0)), at=3.0), Dispatch)
    assert request.body == {"order": 1, "n": 5}


def test_a_recalled_ended_job_keeps_its_leading_window_open_after_a_restart():
    state = make_state(FLOW)
    ended = RecalledJob(_id(0), "leading", {"order": 7}, None, submitted_at=10.0)
    too_old = RecalledJob(_id(1), "leading", {"order": 8}, None, submitted_at=7.0)
    trailing = RecalledJob(_id(2), "trailing", {"order": 7}, None, submitted_at=10.0)
    keyless = RecalledJob(_id(3), "by-tenant", {"order": 1}, {"tenant": "t"}, submitted_at=10.0)
    apply(state, JobsRecalled((keyless, trailing, too_old, ended), at=10.5))
    # Leading windows only, still open at the restart; the job itself stays out of memory.
    assert {wf: list(windows) for wf, windows in state.debounce.items()} == {
        "leading": ["7"], "by-tenant": ['"t"'],
    }  # fmt: skip
    assert state.jobs == {}
    _, commands = _trigger(state, "leading", 5, {"order": 7}, at=11.0)
    (debounced,) = of_type(commands, JobDebounced)
    assert debounced.existing == _id(0)
    _, commands = _trigger(state, "leading", 6, {"order": 7}, at=12.5)  # the window closed
    assert of_type(commands, JobStarted)[0].job_id == _id(6)
