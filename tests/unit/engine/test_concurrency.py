"""Workflow concurrency limits and --max-running-jobs: queued jobs, their order, their starts."""

from __future__ import annotations

import uuid

from tests.unit.engine.helpers import cancel, dispatches, of_type, workflows
from workflow_manager.engine import (
    EngineState,
    Event,
    JobFinished,
    JobQueued,
    JobStarted,
    JobStatus,
    JobSubmitted,
    Refused,
    RetryRequested,
    StartTimer,
    StepReplied,
    TimerFired,
    apply,
    replay,
)

LIMITED = """
workflows:
  - name: w
    concurrency: {limit: 2, key: account}
    steps:
      - name: work
"""
ONE_AT_A_TIME = """
workflows:
  - name: w
    concurrency: {limit: 1}
    steps:
      - name: work
"""
FREE = """
workflows:
  - name: w
    steps:
      - name: work
"""


def ids(n: int) -> list[str]:
    return [str(uuid.uuid5(uuid.NAMESPACE_URL, f"job-{i}")) for i in range(n)]


class Run:
    """A live engine run that keeps its events, and starts timers due at once as they fire."""

    def __init__(self, text: str, max_running_jobs: int | None = None) -> None:
        self.definitions = workflows(text)
        self.max_running_jobs = max_running_jobs
        self.state = self.fresh()
        self.events: list[Event] = []
        self.clock = 0.0

    def fresh(self) -> EngineState:
        return EngineState.from_workflows(self.definitions, max_running_jobs=self.max_running_jobs)

    def do(self, event: Event) -> list:
        self.events.append(event)
        commands = apply(self.state, event)[1]
        # Held work given a slot fires at once, as the orchestrator's timekeeper does.
        for timer in of_type(commands, StartTimer):
            if timer.key.startswith(("admit:", "release:")):
                commands += self.do(TimerFired(timer.key, self.tick()))
        return commands

    def tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def submit(self, job_id: str, payload: dict | None = None, priority: int = 0) -> list:
        return self.do(JobSubmitted(job_id, "w", payload or {}, self.tick(), priority=priority))

    def end(self, job_id: str) -> list[str]:
        """Complete the job's one step; returns the jobs that started as a result."""
        commands = self.do(_reply(self, job_id))
        return [started.job_id for started in of_type(commands, JobStarted)]

    def status(self, job_id: str) -> str:
        return str(self.state.jobs[job_id].status)


def test_at_most_limit_jobs_run_per_key_the_others_queue():
    run = Run(LIMITED)
    a1, a2, a3, b1 = ids(4)
    for job_id in (a1, a2, a3):
        run.submit(job_id, {"account": "a"})
    commands = run.submit(b1, {"account": "b"})
    assert [run.status(j) for j in (a1, a2, a3, b1)] == ["running", "running", "queued", "running"]
    assert of_type(commands, JobQueued)[0].job_id == b1  # queued first, then started at once
    assert run.state.jobs[a3].queued_at == run.state.jobs[a3].submitted_at == 5.0


def test_a_queued_job_starts_when_a_running_one_of_its_key_ends():
    run = Run(LIMITED)
    a1, a2, a3 = ids(3)
    for job_id in (a1, a2, a3):
        run.submit(job_id, {"account": "a"})
    commands = apply(run.state, _reply(run, a1))[1]
    start = [t.key for t in of_type(commands, StartTimer)]
    assert start == [f"admit:{a3}"]
    commands = run.do(TimerFired(start[0], run.tick()))
    assert [s.job_id for s in of_type(commands, JobStarted)] == [a3]
    assert [d.job_id for d in dispatches(commands)] == [a3]
    assert run.status(a3) == "running"


def _reply(run: Run, job_id: str) -> StepReplied:
    event = StepReplied(job_id, "work", b"{}", run.tick())
    run.events.append(event)
    return event


def test_the_highest_priority_starts_first_then_the_oldest():
    run = Run(ONE_AT_A_TIME)
    first, low_old, low_new, high = ids(4)
    run.submit(first)
    run.submit(low_old, priority=1)
    run.submit(low_new, priority=1)
    run.submit(high, priority=7)
    started = []
    for _ in range(3):
        running = next(j for j in run.state.jobs.values() if j.status is JobStatus.RUNNING)
        commands = run.do(_reply(run, running.id))
        started += [s.job_id for s in of_type(commands, JobStarted)]
    assert started == [high, low_old, low_new]


def test_a_key_the_payload_lacks_counts_under_null():
    run = Run(LIMITED)
    jobs = ids(3)
    for job_id in jobs:
        run.submit(job_id, {"other": 1})
    assert [run.status(j) for j in jobs] == ["running", "running", "queued"]
    assert run.state.jobs[jobs[2]].scopes == ("workflow:w:null",)


def test_max_running_jobs_bounds_every_top_level_job():
    run = Run(FREE, max_running_jobs=1)
    one, two = ids(2)
    for job_id in (one, two):
        run.submit(job_id)
    assert [run.status(one), run.status(two)] == ["running", "queued"]
    assert run.end(one) == [two]


def test_a_queued_job_can_be_cancelled_and_never_starts():
    run = Run(ONE_AT_A_TIME)
    first, second, third = ids(3)
    for job_id in (first, second, third):
        run.submit(job_id)
    commands = cancel(run.state, second, at=run.tick())
    (done,) = of_type(commands, JobFinished)
    assert (done.job_id, done.status) == (second, "cancelled")
    assert not dispatches(commands)
    assert run.end(first) == [third]


def test_a_replay_of_the_running_jobs_alone_follows_the_journaled_starts():
    # Live: `first` holds the slot; `low` queues, then `high`; `first` ends and `high` starts.
    run = Run(ONE_AT_A_TIME)
    first, low, high = ids(3)
    run.submit(first)
    run.submit(low)
    run.submit(high, priority=5)
    run.do(_reply(run, first))
    assert (run.status(low), run.status(high)) == ("queued", "running")
    # Recovery replays only the jobs still running (the journal files each start under its job).
    live = [e for e in run.events if getattr(e, "job_id", None) != first]
    live = [e for e in live if not (isinstance(e, TimerFired) and first in e.key)]
    state = replay(run.fresh(), live)
    assert (state.jobs[low].status, state.jobs[high].status) == ("queued", "running")
    assert state.scopes == run.state.scopes
    assert not [k for k in state.timers if k.startswith("admit:")]


def test_a_retry_waits_for_no_one_while_its_limit_is_full_it_is_refused():
    run = Run(ONE_AT_A_TIME)
    failed, other = ids(2)
    run.submit(failed)
    run.do(StepReplied(failed, "work", b"", run.tick(), error="boom"))
    assert run.status(failed) == "failed"
    run.submit(other)
    assert run.status(other) == "running"

    refused = of_type(run.do(RetryRequested(failed, run.tick())), Refused)
    assert [r.kind for r in refused] == ["conflict"]
    assert "concurrency limit (1 running) of workflow 'w' for key null is reached" in (
        refused[0].reason
    )
    assert run.status(failed) == "failed"

    run.end(other)
    assert not of_type(run.do(RetryRequested(failed, run.tick())), Refused)
    assert run.status(failed) == "running"
    assert run.state.scopes["workflow:w:null"].holders == {failed}
