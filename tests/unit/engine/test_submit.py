"""Submitting jobs: what starts, what is rejected and why, and what a duplicate id does."""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    AT_SUBMIT,
    JOB,
    OTHER_JOB,
    TRACE,
    cid,
    dispatches,
    effects,
    finished,
    make_state,
    of_type,
    reply,
    snapshot,
    submit,
    workflow,
)
from workflow_manager.engine import (
    Dispatch,
    EngineState,
    Ignored,
    JobFinished,
    JobRejected,
    JobStarted,
    JobStatus,
    JobSubmitted,
    NotifyOutcome,
    Subject,
    apply,
)
from workflow_manager.engine.snapshot import snapshot as snapshot_of

TWO_WORKFLOWS = """
workflows:
  - name: word-counts
    steps:
      - name: count
  - name: summarise
    steps:
      - name: first
      - name: second
        depends: [first]
"""


@pytest.fixture
def state() -> EngineState:
    return make_state(TWO_WORKFLOWS)


def test_a_valid_submission_starts_the_job_and_dispatches_its_root_step(state: EngineState):
    commands = submit(state, "word-counts", {"text": "a b"}, reply_to="client-q")
    wf = state.workflow("word-counts")
    assert wf is not None
    assert commands == [
        Subject(JOB, JOB),
        JobStarted(
            JOB, JOB, "word-counts", wf.content_hash, "word-counts", None, {"text": "a b"},
            AT_SUBMIT, AT_SUBMIT, TRACE,
        ),
        Dispatch(
            JOB, JOB, "count", "count", cid(JOB, "count"), {"text": "a b"}, "word-counts", 1, TRACE
        ),
    ]  # fmt: skip
    job = state.jobs[JOB]
    assert job.status is JobStatus.RUNNING
    assert job.is_running
    assert job.payload == {"text": "a b"}
    assert job.reply_to == ["client-q"]
    assert job.parent is None


@pytest.mark.parametrize(
    ("payload", "found"),
    [
        ([], "a list"),
        ([{"a": 1}], "a list"),
        ("text", "a string"),
        ("", "a string"),
        (3, "a number"),
        (2.5, "a number"),
        (None, "null"),
        (True, "a boolean"),
    ],
)
def test_a_payload_that_is_not_a_json_object_is_rejected(state, payload, found):
    commands = submit(state, "word-counts", payload)
    assert len(commands) == 1
    (rejected,) = commands
    assert isinstance(rejected, JobRejected)
    assert rejected.kind == "invalid-payload"
    assert rejected.job_id == JOB
    assert rejected.workflow == "word-counts"
    assert "payload must be a JSON object" in rejected.reason
    assert found in rejected.reason
    assert state.jobs == {}


@pytest.mark.parametrize(
    "job_id",
    [
        "not-a-uuid",
        "",
        "1234",
        "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5",  # one digit short
        "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5z",
        42,
        None,
    ],
)
def test_a_job_id_that_is_not_a_uuid_is_rejected(state, job_id):
    commands = submit(state, "word-counts", {"x": 1}, job_id=job_id, reply_to="client-q")
    assert len(commands) == 1
    (rejected,) = commands
    assert isinstance(rejected, JobRejected)
    assert rejected.kind == "invalid-id"
    assert "UUID" in rejected.reason
    assert repr(job_id) in rejected.reason
    assert rejected.reply_to == "client-q"
    assert state.jobs == {}


def test_an_uppercase_job_id_is_accepted_in_canonical_form(state):
    commands = submit(state, "word-counts", job_id=JOB.upper())
    assert list(state.jobs) == [JOB]
    (dispatch,) = dispatches(commands)
    assert dispatch.job_id == JOB
    assert dispatch.correlation_id == f"{JOB}:count"


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("word-count", "did you mean 'word-counts'?"),
        ("summarize", "did you mean 'summarise'?"),
        ("Word-Counts", "did you mean 'word-counts'?"),
        ("zzz", None),
    ],
)
def test_an_unknown_workflow_is_rejected_listing_the_known_ones(state, name, hint):
    commands = submit(state, name, {"x": 1})
    (rejected,) = commands
    assert isinstance(rejected, JobRejected)
    assert rejected.kind == "unknown-workflow"
    assert rejected.workflow == name
    assert f"'{name}'" in rejected.reason
    assert "summarise" in rejected.reason and "word-counts" in rejected.reason
    if hint is None:
        assert "did you mean" not in rejected.reason
    else:
        assert hint in rejected.reason
    assert state.jobs == {}


def test_an_engine_with_no_workflows_rejects_every_job():
    state = EngineState.from_workflows({})
    (rejected,) = submit(state, "anything")
    assert isinstance(rejected, JobRejected)
    assert "unknown workflow 'anything'" in rejected.reason


@pytest.mark.parametrize(
    ("workflow", "payload"),
    [
        ("word-counts", {"text": "a b"}),
        ("word-counts", {"text": "something else"}),
        ("summarise", {}),
    ],
)
def test_a_duplicate_job_id_starts_nothing_and_is_ignored(state, workflow, payload):
    submit(state, "word-counts", {"text": "a b"})
    before = snapshot(state)
    commands = submit(state, workflow, payload)
    assert commands == [Subject(JOB, JOB), Ignored(JOB, "a job with this id already exists")]
    assert state == before


def test_a_duplicate_id_in_other_case_is_the_same_job(state):
    submit(state, "word-counts", {"text": "a b"})
    before = snapshot(state)
    subject, ignored = submit(state, "word-counts", {"text": "a b"}, job_id=JOB.upper())
    assert subject == Subject(JOB, JOB)
    assert isinstance(ignored, Ignored)
    assert state == before


def test_a_duplicate_of_a_running_job_adds_its_reply_to_and_all_get_the_outcome(state):
    submit(state, "word-counts", reply_to="first-q")
    for reply_to in ["second-q", "first-q", "second-q", None, "third-q"]:
        commands = submit(state, "word-counts", reply_to=reply_to)
        assert of_type(commands, Ignored) and not of_type(commands, NotifyOutcome)
    assert state.jobs[JOB].reply_to == ["first-q", "second-q", "third-q"]

    commands = reply(state, cid(JOB, "count"), {"words": 2})
    outcomes = of_type(commands, NotifyOutcome)
    assert outcomes == [
        NotifyOutcome(q, JOB, JOB, "completed", {"words": 2})
        for q in ["first-q", "second-q", "third-q"]
    ]


def test_a_duplicate_of_a_completed_job_is_told_the_outcome_at_once(state):
    submit(state, "word-counts")
    reply(state, cid(JOB, "count"), {"words": 2})
    before = snapshot(state)
    commands = submit(state, "word-counts", reply_to="late-q")
    assert commands[0] == Subject(JOB, JOB)
    commands = effects(commands)
    assert len(commands) == 2
    assert isinstance(commands[0], Ignored)
    assert commands[1] == NotifyOutcome("late-q", JOB, JOB, "completed", {"words": 2})
    assert state == before


def test_a_duplicate_of_a_failed_job_is_told_the_failure_at_once(state):
    submit(state, "word-counts")
    reply(state, cid(JOB, "count"), error="disk full")
    commands = effects(submit(state, "word-counts", reply_to="late-q"))
    error = {"step": "count", "message": "disk full"}
    assert isinstance(commands[0], Ignored)
    assert commands[1:] == [NotifyOutcome("late-q", JOB, JOB, "failed", {"error": error})]


def test_without_reply_to_a_duplicate_of_a_finished_job_is_only_ignored(state):
    submit(state, "word-counts")
    reply(state, cid(JOB, "count"), {})
    (ignored,) = effects(submit(state, "word-counts"))
    assert isinstance(ignored, Ignored)


def test_two_jobs_of_the_same_workflow_run_independently(state):
    submit(state, "summarise", {"n": 1})
    submit(state, "summarise", {"n": 2}, job_id=OTHER_JOB)
    commands = reply(state, cid(OTHER_JOB, "first"), {"done": 2})
    assert [(d.job_id, d.step, d.body) for d in dispatches(commands)] == [
        (OTHER_JOB, "second", {"done": 2})
    ]
    assert state.jobs[JOB].steps["first"].status == "running"


def test_the_outcome_of_a_job_without_reply_to_is_only_job_finished(state):
    submit(state, "word-counts")
    commands = reply(state, cid(JOB, "count"), {"words": 0}, at=7.5)
    assert commands[0] == Subject(JOB, JOB)
    (done,) = effects(commands)
    assert isinstance(done, JobFinished)
    assert (done.job_id, done.root_id, done.workflow, done.status) == (
        JOB,
        JOB,
        "word-counts",
        "completed",
    )
    assert (done.result, done.error, done.parent_id, done.at) == ({"words": 0}, None, None, 7.5)
    assert done.snapshot == snapshot_of(state.jobs[JOB])
    assert finished(commands).status == JobStatus.COMPLETED


def test_job_status_values_are_the_documented_ones():
    documented = {"scheduled", "queued", "running", "completed", "failed", "cancelled"}
    assert {s.value for s in JobStatus} == documented


V1 = """
workflows:
  - name: w
    steps:
      - name: a
"""
V2 = """
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
"""


def _versions() -> tuple[EngineState, str, str]:
    old, new = workflow(V1), workflow(V2)
    return EngineState.from_workflows({"w": new}, pinned=[old]), old.content_hash, new.content_hash


def test_a_job_pinned_to_an_older_definition_runs_that_version():
    state, old, new = _versions()
    assert old != new
    _, commands = apply(state, JobSubmitted(JOB, "w", {}, AT_SUBMIT, definition=old))
    assert [d.step for d in dispatches(commands)] == ["a"]
    assert finished(reply(state, cid(JOB, "a"), {"v": 1})).result == {"v": 1}
    submit(state, "w", job_id=OTHER_JOB)
    assert list(state.jobs[OTHER_JOB].steps) == ["a", "b"]


@pytest.mark.parametrize("definition", ["0123456789abcdef", ""])
def test_an_unknown_definition_of_a_known_workflow_is_rejected_without_a_misleading_hint(
    definition,
):
    state, _, new = _versions()
    _, commands = apply(state, JobSubmitted(JOB, "w", {}, AT_SUBMIT, definition=definition))
    (rejected,) = commands
    assert isinstance(rejected, JobRejected)
    assert f"no version {definition}" in rejected.reason
    assert new in rejected.reason
    assert "did you mean" not in rejected.reason
    assert state.jobs == {}
