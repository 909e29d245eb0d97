"""Step concurrency: at most N requests of a step outstanding, all jobs and children together."""

from __future__ import annotations

from tests.unit.engine.test_concurrency import Run, ids
from workflow_manager.engine import (
    CancelRequested,
    Dispatch,
    StepReplied,
    StepStatus,
    TimerFired,
    replay,
)

GATED = """
workflows:
  - name: w
    steps:
      - name: fetch
        concurrency: 2
        retries: 1
        retry_backoff: {initial: 1, multiplier: 1, max: 1}
      - {name: work, depends: [fetch]}
"""


def test_at_most_n_requests_of_a_step_are_outstanding_across_jobs():
    run = Run(GATED)
    jobs = ids(4)
    sent = []
    for job_id in jobs:
        sent += [c for c in run.submit(job_id) if isinstance(c, Dispatch)]
    assert [d.job_id for d in sent] == jobs[:2]
    assert [run.state.jobs[j].steps["fetch"].status for j in jobs[2:]] == [StepStatus.QUEUED] * 2
    commands = run.do(_replied(run, jobs[0], "fetch"))
    fetched = [d.job_id for d in commands if isinstance(d, Dispatch) and d.step == "fetch"]
    assert fetched == [jobs[2]]


def test_a_higher_priority_dispatch_goes_first_and_a_failed_attempt_frees_its_slot():
    run = Run(GATED)
    a, b, low, high = ids(4)
    run.submit(a)
    run.submit(b)
    run.submit(low, priority=1)
    run.submit(high, priority=8)
    commands = run.do(_replied(run, a, "fetch", error="boom"))  # a retries after 1 s
    fetched = [d.job_id for d in commands if isinstance(d, Dispatch) and d.step == "fetch"]
    assert fetched == [high]
    # a's retry waits for a slot like any dispatch: behind `low`.
    commands = run.do(TimerFired(f"retry:{a}:fetch:2", run.tick()))
    assert run.state.jobs[a].steps["fetch"].status is StepStatus.QUEUED
    commands = run.do(_replied(run, b, "fetch"))
    fetched = [d.job_id for d in commands if isinstance(d, Dispatch) and d.step == "fetch"]
    assert fetched == [low]


def test_a_cancelled_job_gives_its_slot_back():
    run = Run(GATED)
    a, b, c = ids(3)
    for job_id in (a, b, c):
        run.submit(job_id)
    commands = run.do(CancelRequested(a, run.tick()))
    fetched = [d.job_id for d in commands if isinstance(d, Dispatch) and d.step == "fetch"]
    assert fetched == [c]


def test_a_replay_of_the_running_jobs_alone_follows_the_journaled_releases():
    run = Run(GATED.replace("concurrency: 2", "concurrency: 1"))
    first, low, high = ids(3)
    run.submit(first)
    run.submit(low)
    run.submit(high, priority=5)
    run.do(_replied(run, first, "fetch"))
    run.do(_replied(run, first, "work"))
    state = replay(run.fresh(), [e for e in run.events if first not in repr(e)])
    for job_id in (low, high):
        live = run.state.jobs[job_id].steps["fetch"]
        assert state.jobs[job_id].steps["fetch"].status is live.status
    assert state.jobs[high].steps["fetch"].status is StepStatus.RUNNING
    assert state.gates == run.state.gates


def _replied(run: Run, job_id: str, step: str, error: str | None = None) -> StepReplied:
    return StepReplied(job_id, step, b"{}", run.tick(), error=error)
