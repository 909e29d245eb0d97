"""Nested limits (`limits:` of the workflow file): a job starts only when every limit that
applies to it has room, waits under the first full one, and replays to the same scopes."""

from __future__ import annotations

import uuid

import yaml

from tests.unit.engine.helpers import of_type
from workflow_manager.config.joblimits import JobLimit
from workflow_manager.config.models import WorkflowFile
from workflow_manager.engine import (
    EngineState,
    Event,
    JobStarted,
    JobSubmitted,
    Refused,
    RetryRequested,
    StartTimer,
    StepReplied,
    TimerFired,
    apply,
    replay,
)
from workflow_manager.engine.admission import WaitingFor, waiting_for

# Global 3 / per tenant 2 / per workflow 1 (for `orders` only), as the queue-based design has it.
NESTED = """
limits:
  - {name: global, limit: 3}
  - {name: per-tenant, limit: 2, key: meta.tenant}
  - {name: orders-one, limit: 1, workflows: [orders]}
workflows:
  - name: orders
    steps: [{name: work}]
  - name: invoices
    steps: [{name: work}]
  - name: reports
    concurrency: {limit: 1}
    steps: [{name: work}]
"""


def ids(n: int) -> list[str]:
    return [str(uuid.uuid5(uuid.NAMESPACE_URL, f"nested-{i}")) for i in range(n)]


class Run:
    """A live engine run that keeps its events and fires admit timers at once."""

    def __init__(self, text: str = NESTED, max_running_jobs: int | None = None) -> None:
        doc = WorkflowFile.model_validate(yaml.safe_load(text))
        self.definitions = {wf.name: wf for wf in doc.workflows}
        self.limits = doc.limits
        self.max_running_jobs = max_running_jobs
        self.state = self.fresh()
        self.events: list[Event] = []
        self.clock = 0.0

    def fresh(self, limits: tuple[JobLimit, ...] | None = None) -> EngineState:
        return EngineState.from_workflows(
            self.definitions,
            max_running_jobs=self.max_running_jobs,
            limits=self.limits if limits is None else limits,
        )

    def do(self, event: Event) -> list:
        self.events.append(event)
        commands = apply(self.state, event)[1]
        for timer in of_type(commands, StartTimer):
            if timer.key.startswith("admit:"):
                commands += self.do(TimerFired(timer.key, self.tick()))
        return commands

    def tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def submit(self, job_id: str, workflow: str, tenant: str, priority: int = 0) -> list:
        event = JobSubmitted(
            job_id, workflow, {}, self.tick(), priority=priority, meta={"tenant": tenant}
        )
        return self.do(event)

    def end(self, job_id: str) -> list[str]:
        """Complete the job's one step; the jobs that started as a result."""
        commands = self.do(StepReplied(job_id, "work", b"{}", self.tick()))
        return [started.job_id for started in of_type(commands, JobStarted)]

    def status(self, job_id: str) -> str:
        return str(self.state.jobs[job_id].status)

    def waits_for(self, job_id: str) -> WaitingFor | None:
        return waiting_for(self.state, self.state.jobs[job_id])


def test_a_job_counts_against_each_limit_that_applies_in_file_order():
    run = Run()
    o1, i1, r1 = ids(3)
    run.submit(o1, "orders", "acme")
    run.submit(i1, "invoices", "acme")
    run.submit(r1, "reports", "beta")
    assert run.state.jobs[o1].scopes == (
        "limit:global:null",
        'limit:per-tenant:"acme"',
        "limit:orders-one:null",
    )
    assert run.state.jobs[i1].scopes == ("limit:global:null", 'limit:per-tenant:"acme"')
    # The workflow's own concurrency comes first.
    assert run.state.jobs[r1].scopes[0] == "workflow:reports:null"


def test_a_job_waits_under_the_first_full_limit_and_starts_when_all_have_room():
    run = Run()
    o1, o2, i1, i2, i3 = ids(5)
    run.submit(o1, "orders", "acme")
    run.submit(o2, "orders", "beta")  # per-tenant has room; orders-one is full
    assert run.status(o2) == "queued"
    assert run.waits_for(o2) == WaitingFor("limit", "orders-one", None, 1, 1)
    run.submit(i1, "invoices", "acme")  # acme: 2 of 2 now
    run.submit(i2, "invoices", "acme")
    assert run.waits_for(i2) == WaitingFor("limit", "per-tenant", '"acme"', 2, 2)
    run.submit(i3, "invoices", "beta")  # global: o1, i1, i3
    assert [run.status(j) for j in (o1, i1, i3)] == ["running"] * 3
    assert run.waits_for(o1) is None

    # o1 ends: orders-one and acme have room, global too; o2 (beta) is first in line.
    assert run.end(o1) == [o2]
    assert run.waits_for(i2) == WaitingFor("limit", "global", None, 3, 3)
    # i3 ends: global has room again and acme too (i1 alone): i2 goes.
    assert run.end(i3) == [i2]
    assert run.status(i2) == "running"
    assert all(len(s.holders) <= s.limit for s in run.state.scopes.values())


def test_priority_still_orders_the_jobs_waiting_under_several_limits():
    run = Run()
    first, low, high = ids(3)
    run.submit(first, "orders", "acme")
    run.submit(low, "orders", "beta", priority=1)
    run.submit(high, "orders", "gamma", priority=8)
    assert run.end(first) == [high]
    assert run.end(high) == [low]


def test_a_job_full_under_one_limit_lets_a_later_job_of_another_key_go():
    run = Run()
    a1, a2, a3, b1 = ids(4)
    run.submit(a1, "invoices", "acme")
    run.submit(a2, "invoices", "acme")
    run.submit(a3, "invoices", "acme")  # acme full
    run.submit(b1, "invoices", "beta")  # global: a1, a2, b1
    assert [run.status(j) for j in (a3, b1)] == ["queued", "running"]
    assert run.end(b1) == []  # a global slot is free, but a3's tenant is full: none starts
    assert run.waits_for(a3) == WaitingFor("limit", "per-tenant", '"acme"', 2, 2)
    assert run.end(a1) == [a3]


def test_the_workflow_concurrency_is_named_before_the_limits():
    run = Run()
    r1, r2 = ids(2)
    run.submit(r1, "reports", "acme")
    run.submit(r2, "reports", "acme")
    assert run.waits_for(r2) == WaitingFor("concurrency", "concurrency", None, 1, 1)


def test_max_running_jobs_is_named_after_the_limits():
    run = Run(max_running_jobs=1)
    i1, i2 = ids(2)
    run.submit(i1, "invoices", "acme")
    run.submit(i2, "invoices", "beta")
    assert run.state.jobs[i2].scopes[-1] == "all"
    assert run.waits_for(i2) == WaitingFor("max_running_jobs", "max_running_jobs", None, 1, 1)


def test_a_retry_over_a_full_limit_is_refused_naming_it():
    run = Run()
    failed, other = ids(2)
    run.submit(failed, "orders", "acme")
    run.do(StepReplied(failed, "work", b"", run.tick(), error="boom"))
    run.submit(other, "orders", "beta")
    assert run.status(other) == "running"
    (refused,) = of_type(run.do(RetryRequested(failed, run.tick())), Refused)
    assert "limit 'orders-one' (1 running) for key null is reached" in refused.reason
    run.end(other)
    assert not of_type(run.do(RetryRequested(failed, run.tick())), Refused)
    assert run.status(failed) == "running"


def test_a_new_file_limit_counts_for_the_scopes_already_made():
    run = Run()
    o1, o2 = ids(2)
    run.submit(o1, "orders", "acme")
    run.submit(o2, "orders", "beta")
    assert run.status(o2) == "queued"
    wider = tuple(
        entry.model_copy(update={"limit": 2}) if entry.name == "orders-one" else entry
        for entry in run.limits
    )
    state = replay(run.fresh(wider), run.events)
    assert state.scopes["limit:orders-one:null"].limit == 2
    # o2 has its slots now: its start timer is due at once (recovery fires it).
    assert f"admit:{o2}" in state.timers
    assert waiting_for(state, state.jobs[o2]) is None


def test_a_replay_gives_the_same_scopes_and_waiting_lines():
    run = Run()
    jobs = ids(6)
    for i, job_id in enumerate(jobs):
        run.submit(job_id, ("orders", "invoices")[i % 2], ("acme", "beta", "gamma")[i % 3])
    run.end(jobs[0])
    state = replay(run.fresh(), run.events)
    assert state.scopes == run.state.scopes
    assert {j.id: j.status for j in state.jobs.values()} == {
        j.id: j.status for j in run.state.jobs.values()
    }
    for job_id in jobs:
        assert waiting_for(state, state.jobs[job_id]) == run.waits_for(job_id)


FAIR = """
limits:
  - {name: global, limit: 1}
workflows:
  - name: invoices
    fairness: {key: meta.tenant}
    steps: [{name: work}]
"""


def test_fairness_still_takes_turns_across_tenants_under_a_limit():
    run = Run(FAIR)
    a1, a2, a3, b1 = ids(4)
    for job_id in (a1, a2, a3):
        run.submit(job_id, "invoices", "acme")
    run.submit(b1, "invoices", "beta")  # after acme's two waiting, but acme had its turn
    assert run.end(a1) == [b1]
    assert run.end(b1) == [a2]
    assert run.waits_for(a3) == WaitingFor("limit", "global", None, 1, 1)
