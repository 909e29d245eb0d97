"""Fairness through the engine: waiting work goes round-robin across keys, weighted."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.unit.engine.helpers import of_type
from tests.unit.engine.test_concurrency import Run, ids
from workflow_manager.engine import (
    Dispatch,
    JobRejected,
    JobStarted,
    JobSubmitted,
    StepReplied,
    replay,
)

FANNED = """
workflows:
  - name: w
    fairness: {key: tenant}
    steps:
      - {name: fan, task: t}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - {name: work, queue: q, concurrency: 2}
"""

ONE_AT_A_TIME = """
workflows:
  - name: w
    concurrency: {limit: 1}
    fairness: {key: meta.tenant, weight: weight}
    steps:
      - {name: only, queue: q}
"""


def _dispatched(commands: list) -> list[Dispatch]:
    return [c for c in commands if isinstance(c, Dispatch)]


def _tenant_of(run: Run, dispatch: Dispatch) -> str:
    return str(run.state.jobs[dispatch.root_id].payload["tenant"])


@pytest.mark.parametrize("fair", [True, False])
def test_another_tenants_first_child_goes_at_the_next_free_slot(fair: bool) -> None:
    text = FANNED if fair else FANNED.replace("    fairness: {key: tenant}\n", "")
    run = Run(text)
    a, b = ids(2)
    sent = _dispatched(run.submit(a, {"tenant": "a", "items": list(range(1000))}))
    assert len(sent) == 2  # the rest of a's 1,000 children wait for the step's two slots
    run.submit(b, {"tenant": "b", "items": [0]})
    commands = run.do(StepReplied(sent[0].job_id, "work", b"{}", run.tick()))
    (released,) = _dispatched(commands)
    assert _tenant_of(run, released) == ("b" if fair else "a")


def test_the_tenants_take_turns_while_both_wait() -> None:
    run = Run(FANNED)
    a, b = ids(2)
    out = _dispatched(run.submit(a, {"tenant": "a", "items": list(range(50))}))
    run.submit(b, {"tenant": "b", "items": list(range(50))})
    order = []
    for _ in range(20):
        done = out.pop(0)
        released = _dispatched(run.do(StepReplied(done.job_id, "work", b"{}", run.tick())))
        order += [_tenant_of(run, d) for d in released]
        out += released
    assert Counter(order) == {"a": 10, "b": 10}
    # The journal's events rebuild the same waiting lines.
    assert replay(run.fresh(), run.events).gates == run.state.gates


def test_queued_jobs_start_by_weight_across_keys() -> None:
    run = Run(ONE_AT_A_TIME)
    first, *rest = ids(25)
    heavy, light = rest[:12], rest[12:]
    run.do(_submitted(run, first, "first", 1))
    for job_id in heavy:
        run.do(_submitted(run, job_id, "heavy", 2))
    for job_id in light:
        run.do(_submitted(run, job_id, "light", 1))
    started: list[str] = []
    running = first
    for _ in range(9):
        commands = run.do(StepReplied(running, "only", b"{}", run.tick()))
        (running,) = [s.job_id for s in of_type(commands, JobStarted)]
        started.append("heavy" if running in heavy else "light")
    assert Counter(started) == {"heavy": 6, "light": 3}
    assert replay(run.fresh(), run.events).scopes == run.state.scopes


def test_a_weight_that_is_not_a_number_refuses_the_job_saying_why() -> None:
    run = Run(ONE_AT_A_TIME)
    (job_id,) = ids(1)
    commands = run.do(_submitted(run, job_id, "t", "lots"))
    (rejected,) = of_type(commands, JobRejected)
    assert rejected.reason == (
        "fairness of workflow 'w': weight 'weight' gave \"lots\"; it must be a number from "
        "0.001 to 1000"
    )
    assert job_id not in run.state.jobs


def _submitted(run: Run, job_id: str, tenant: str, weight: object) -> JobSubmitted:
    return JobSubmitted(job_id, "w", {"weight": weight}, run.tick(), meta={"tenant": tenant})
