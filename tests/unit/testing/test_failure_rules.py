"""Retries, on_error and a job's timeout, run in a Simulation: these tests were end to end
(tests/integration/system/test_failures.py), waiting out real backoffs and a real timeout
with a manager process and RabbitMQ that were not what they tested. The rules are the
engine's; the simulation runs them with the same engine and virtual time."""

from __future__ import annotations

from typing import Any

from pyworker import StepContext
from workflow_manager.config import parse_workflows
from workflow_manager.testing import NoReply, Simulation

WORKFLOWS = """
workflows:
  - name: flaky
    defaults: {retry_backoff: {initial: 5, multiplier: 2, max: 20}}
    steps:
      - {name: flaky, retries: 3}
  - name: doomed
    steps:
      - {name: first}
      - {name: boom, depends: [first], retries: 1,
         retry_backoff: {initial: 5, multiplier: 1, max: 5}}
    on_error:
      - {name: alert}
      - {name: after-alert, depends: [alert]}
  - name: deadline
    timeout: 300
    steps:
      - {name: hand}
"""


def _flaky(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    if ctx.attempt <= data.get("fail_times", 2):
        raise RuntimeError(f"flaky failure on attempt {ctx.attempt}")
    return {"attempt": ctx.attempt}


async def test_a_step_that_fails_twice_then_succeeds_with_three_retries():
    sim = Simulation(parse_workflows(WORKFLOWS))
    sim.serve("flaky", _flaky)
    job_id = await sim.start("flaky", {"fail_times": 2})
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.status == "completed" and job.result == {"attempt": 3}
    attempts = job.step("flaky").attempts
    assert [a.outcome for a in attempts] == ["retrying", "retrying", "completed"]
    # The waits grow by the backoff's multiplier (with the engine's jitter): 5 s, then 10 s.
    waits = [attempts[i + 1].sent_at - attempts[i].ended_at for i in range(2)]
    assert 0 < waits[0] <= 5 and waits[0] < waits[1] <= 10


async def test_a_step_that_always_fails_runs_on_error_with_the_error_and_the_payload():
    sim = Simulation(parse_workflows(WORKFLOWS))
    seen: dict[str, Any] = {}

    def boom(data: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("boom in boom")

    def alert(data: dict[str, Any]) -> dict[str, Any]:
        seen.update(data)
        return {"alerted": True}

    sim.serve("first", lambda data: data)
    sim.serve("boom", boom)
    sim.serve("alert", alert)
    sim.serve("after-alert", lambda data: {})
    job_id = await sim.start("doomed", {"book": "b"})
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.status == "failed" and job.error is not None
    assert (job.error["step"], job.error["message"]) == ("boom", "ValueError: boom in boom")
    assert seen["error"]["step"] == "boom" and seen["error"]["attempts"] == 2
    assert seen["book"] == "b"
    assert job.step("after-alert").status == "completed"


async def test_the_job_timeout_fails_the_job_with_no_step():
    sim = Simulation(parse_workflows(WORKFLOWS))

    def hand(data: dict[str, Any]) -> dict[str, Any]:
        raise NoReply  # the worker is still at it when the job's time is up

    sim.serve("hand", hand)
    job_id = await sim.start("deadline")
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.status == "failed"
    assert job.error == {"step": None, "message": "job timed out after 300s"}
    assert job.finished_at is not None and job.started_at is not None
    assert job.finished_at - job.started_at == 300
