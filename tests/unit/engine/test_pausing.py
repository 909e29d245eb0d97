"""Pausing a job (engine/pausing.py), through a Simulation: no new request goes out, requests
in flight finish and are kept, timers wait; resume carries on; cancel lets go; refusals say why;
a paused job is paused again when its events are replayed."""

from __future__ import annotations

from typing import Any

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.engine import (
    EngineState,
    JobPauseSet,
    JobSubmitted,
    PauseRequested,
    apply,
    replay,
)
from workflow_manager.testing import Simulation, SimulationError

WORKFLOWS = """
workflows:
  - name: chain
    steps:
      - {name: a}
      - {name: b, depends: [a]}
      - {name: c, depends: [b]}
    on_cancel:
      - {name: tidy}
  - name: fan
    steps:
      - {name: each, task: per}
    tasks:
      - name: per
        itemListKey: items
        max_in_flight: 1
        steps:
          - {name: work}
  - name: retried
    steps:
      - name: flaky
        retries: 1
        retry_backoff: {initial: 60, multiplier: 1, max: 60}
"""


def _sim() -> tuple[Simulation, list[str]]:
    sim = Simulation(parse_workflows(WORKFLOWS))
    sent: list[str] = []

    def step(name: str) -> Any:
        def handle(data: dict[str, Any]) -> dict[str, Any]:
            sent.append(name)
            return {**data, name: True}

        return handle

    for name in ("a", "b", "c", "tidy", "work"):
        sim.serve(name, step(name))
    return sim, sent


async def test_a_paused_job_sends_nothing_new_keeps_what_was_in_flight_and_resumes():
    sim, sent = _sim()
    job_id = await sim.start("chain")
    await sim.pause(job_id)  # `a` was sent when the job started: it is in flight
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert sent == ["a"] and job.step("a").status == "completed"  # its result is kept
    assert job.status == "running" and "b" not in job.steps  # b is ready but held
    assert [e.type for e in sim.events if e.type.startswith("job.")][-1] == "job.paused"
    await sim.resume(job_id)
    await sim.run_until_idle()
    assert sent == ["a", "b", "c"] and sim.job(job_id).result == {"a": True, "b": True, "c": True}
    assert "job.resumed" in [e.type for e in sim.events]


async def test_a_paused_fan_out_holds_its_childrens_requests():
    sim, sent = _sim()
    job_id = await sim.start("fan", {"items": [1, 2, 3]})
    await sim.pause(job_id)  # the first child's request is in flight, one at a time
    await sim.run_until_idle()
    assert sent == ["work"]  # the second child exists, its request held
    assert sim.job(job_id).status == "running"
    await sim.resume(job_id)
    await sim.run_until_idle()
    assert sim.job(job_id).status == "completed" and sent == ["work"] * 3


async def test_a_paused_jobs_timers_wait_for_the_resume():
    sim = Simulation(parse_workflows(WORKFLOWS))
    attempts: list[int] = []

    def flaky(data: dict[str, Any], ctx: Any) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")
        return {"ok": True}

    sim.serve("flaky", flaky)
    job_id = await sim.start("retried")
    await sim.run_until_idle()
    assert sim.job(job_id).status == "completed"  # unpaused: the retry went after its wait
    paused = await sim.start("retried")
    attempts.clear()
    await sim.pause(paused)
    await sim.advance(3600)  # its retry wait came due an hour ago: it waits
    assert attempts == [1] and sim.job(paused).status == "running"
    await sim.resume(paused)
    await sim.run_until_idle()
    assert attempts == [1, 2] and sim.job(paused).status == "completed"


async def test_cancelling_a_paused_job_runs_its_on_cancel_steps():
    sim, sent = _sim()
    job_id = await sim.start("chain")
    await sim.pause(job_id)
    await sim.run_until_idle()
    await sim.cancel(job_id)
    await sim.run_until_idle()
    assert sim.job(job_id).status == "cancelled" and sent == ["a", "tidy"]


async def test_pause_and_resume_are_refused_saying_why():
    sim, _ = _sim()
    with pytest.raises(SimulationError, match="no job"):
        await sim.pause("00000000-0000-4000-8000-00000000dead")
    job_id = await sim.start("chain")
    with pytest.raises(SimulationError, match="is not paused"):
        await sim.resume(job_id)
    await sim.pause(job_id)
    with pytest.raises(SimulationError, match="is paused already"):
        await sim.pause(job_id)
    await sim.resume(job_id)
    await sim.run_until_idle()
    with pytest.raises(SimulationError, match="only a running job can be paused"):
        await sim.pause(job_id)


def test_replaying_a_paused_jobs_events_pauses_it_again():
    workflows = parse_workflows(WORKFLOWS)
    state = EngineState.from_workflows(workflows)
    job_id = "00000000-0000-4000-8000-000000000001"
    definition = workflows["chain"].content_hash
    replay(
        state,
        [
            JobSubmitted(job_id, "chain", {}, 1.0, definition=definition),
            PauseRequested(job_id, True, 2.0),
        ],
    )
    assert state.jobs[job_id].paused and job_id in state.paused
    _, commands = apply(state, PauseRequested(job_id, False, 3.0))
    assert any(isinstance(c, JobPauseSet) and not c.paused for c in commands)
    assert not state.paused


LIMITED = """
workflows:
  - name: limited
    steps:
      - {name: c, concurrency: 1}
"""


async def test_a_slot_that_comes_free_for_a_paused_job_waits_with_it():
    sim = Simulation(parse_workflows(LIMITED))
    served: list[str] = []

    def c(data: dict[str, Any], ctx: Any) -> dict[str, Any]:
        served.append(ctx.job_id)
        return {"by": ctx.job_id}

    sim.serve("c", c)
    first = await sim.start("limited")
    second = await sim.start("limited")  # its request waits for the step's one slot
    await sim.pause(second)
    await sim.run_until_idle()  # the first answers: the slot goes to the second, held
    assert served == [first] and sim.job(second).status == "running"
    await sim.resume(second)
    await sim.run_until_idle()
    assert served == [first, second] and sim.job(second).result == {"by": second}
