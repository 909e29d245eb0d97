"""Unique jobs: a second submission whose key an unfinished job holds starts nothing and names
that job; the key is free again once the job settles; null is a key; replay rebuilds the index."""

from __future__ import annotations

from tests.unit.engine.helpers import (
    JOB,
    OTHER_JOB,
    cancel,
    cid,
    make_state,
    of_type,
    reply,
    retry_job,
    submit,
)
from workflow_manager.engine import (
    JobDuplicate,
    JobRejected,
    JobStarted,
    JobStatus,
    JobSubmitted,
    apply,
    replay,
)

THIRD = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
FLOW = """
workflows:
  - name: refresh
    unique: {key: account}
    steps: [{name: fetch}]
  - name: later
    unique: {key: "abs(n)"}
    steps: [{name: fetch}]
"""


def _submit(state, job_id, payload, at=1.0, **extra):
    event = JobSubmitted(job_id, "refresh", payload, at, reply_to="answers", **extra)
    return event, apply(state, event)[1]


def test_a_second_job_with_the_same_key_is_a_duplicate_naming_the_first():
    state = make_state(FLOW)
    submit(state, "refresh", {"account": "a"})
    _, commands = _submit(state, OTHER_JOB, {"account": "a", "more": 1}, at=2.0)
    assert len(commands) == 1
    (duplicate,) = commands
    assert isinstance(duplicate, JobDuplicate)
    assert (duplicate.existing, duplicate.key, duplicate.reply_to) == (JOB, '"a"', "answers")
    assert OTHER_JOB not in state.jobs
    # Another key starts at once.
    _, commands = _submit(state, THIRD, {"account": "b"}, at=3.0)
    assert of_type(commands, JobStarted)


def test_the_key_is_free_once_the_job_ends_and_a_new_job_starts():
    state = make_state(FLOW)
    submit(state, "refresh", {"account": "a"})
    reply(state, cid(JOB, "fetch"), {}, at=2.0)
    assert state.jobs[JOB].status is JobStatus.COMPLETED and state.unique == {}
    _, commands = _submit(state, OTHER_JOB, {"account": "a"}, at=3.0)
    assert of_type(commands, JobStarted)
    assert state.unique == {("refresh", '"a"'): OTHER_JOB}


def test_a_missing_key_counts_under_null():
    state = make_state(FLOW)
    submit(state, "refresh", {})
    _, commands = _submit(state, OTHER_JOB, {"account": None}, at=2.0)
    assert of_type(commands, JobDuplicate)[0].key == "null"


def test_a_scheduled_job_holds_its_key_and_a_cancelled_one_frees_it():
    state = make_state(FLOW)
    _submit(state, JOB, {"account": "a"}, not_before=50.0)
    _, commands = _submit(state, OTHER_JOB, {"account": "a"}, at=2.0)
    assert of_type(commands, JobDuplicate)
    cancel(state, JOB, at=3.0)
    _, commands = _submit(state, OTHER_JOB, {"account": "a"}, at=4.0)
    assert of_type(commands, JobStarted)


def test_a_retried_job_takes_its_key_again():
    state = make_state(FLOW)
    submit(state, "refresh", {"account": "a"})
    reply(state, cid(JOB, "fetch"), error="down", at=2.0)
    assert state.unique == {}
    retry_job(state, JOB, at=3.0)
    assert state.unique == {("refresh", '"a"'): JOB}


def test_a_key_that_cannot_be_evaluated_rejects_the_submission():
    state = make_state(FLOW)
    event = JobSubmitted(JOB, "later", {"n": "x"}, 1.0)
    (rejected,) = apply(state, event)[1]
    assert isinstance(rejected, JobRejected)
    assert "unique.key of workflow 'later'" in rejected.reason


def test_replaying_the_submissions_rebuilds_the_index():
    state = make_state(FLOW)
    events = [JobSubmitted(JOB, "refresh", {"account": "a"}, 1.0)]
    events.append(JobSubmitted(THIRD, "refresh", {"account": "b"}, 2.0))
    for event in events:
        apply(state, event)
    rebuilt = replay(make_state(FLOW), events)
    assert rebuilt.unique == state.unique == {
        ("refresh", '"a"'): JOB, ("refresh", '"b"'): THIRD
    }  # fmt: skip
