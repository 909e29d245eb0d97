"""workflow_manager.testing.Simulation: the real engine and validation, steps served by Python
functions, virtual time; no broker, no manager process."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from pyworker import StepContext, Worker
from workflow_manager.config import parse_workflows
from workflow_manager.errors import ConfigError
from workflow_manager.testing import START, NoReply, Simulation, SimulationError, UnservedStep

DAY = 86_400.0

RETRIED = """
workflows:
  - name: retried
    steps:
      - name: fetch
        retries: 3
        retry_backoff: {initial: 600, multiplier: 1, max: 600}
      - {name: store, depends: [fetch]}
"""


def _counting_failures(fail_times: int) -> Any:
    calls = {"n": 0}

    def fetch(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        calls["n"] += 1
        if ctx.attempt <= fail_times:
            raise RuntimeError(f"flaky on attempt {ctx.attempt}")
        return {"rows": 3}

    return fetch, calls


async def test_retries_wait_their_backoff_in_virtual_time_and_every_attempt_is_shown():
    sim = Simulation(parse_workflows(RETRIED))
    fetch, calls = _counting_failures(2)
    sim.serve("fetch", fetch)
    sim.serve("store", lambda data: {"stored": data["rows"]})
    job_id = await sim.start("retried", {"table": "t"})
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.status == "completed" and job.result == {"stored": 3}
    attempts = job.step("fetch").attempts
    assert [(a.number, a.outcome) for a in attempts] == [
        (1, "retrying"), (2, "retrying"), (3, "completed"),
    ]  # fmt: skip
    assert attempts[0].message == "RuntimeError: flaky on attempt 1"
    assert attempts[2].output == {"rows": 3} and attempts[2].input == {"table": "t"}
    # Each retry waited (about) its 600 s backoff, on the virtual clock only.
    assert attempts[1].sent_at - attempts[0].ended_at >= 300
    assert sim.now - START >= 600 and calls["n"] == 3
    types = [e.type for e in sim.events]
    assert types[0] == "job.started" and types[-1] == "job.completed"
    assert types.count("step.retrying") == 2


def _hundred_steps() -> str:
    steps = [
        "      - name: s0\n        retries: 3\n"
        "        retry_backoff: {initial: 600, multiplier: 1, max: 600}\n"
    ]
    steps += [f"      - {{name: s{i}, depends: [s{i - 1}]}}\n" for i in range(1, 100)]
    return "workflows:\n  - name: hundred\n    steps:\n" + "".join(steps)


async def test_a_hundred_steps_a_day_of_delay_and_three_retries_run_at_once():
    """The issue's target: a 1-day delayed start and 3 retries of 10 minutes' backoff; the
    wall time goes to the output (no timed assertion), the virtual time is checked."""
    started = time.perf_counter()
    sim = Simulation(parse_workflows(_hundred_steps()))
    fetch, _ = _counting_failures(3)
    sim.serve("s0", fetch)
    for i in range(1, 100):
        sim.serve(f"s{i}", lambda data: data)
    job_id = await sim.start("hundred", {}, delay=DAY)
    await sim.run_until_idle()
    job = sim.job(job_id)
    print(f"100 steps, 1 day delay, 3 retries: {time.perf_counter() - started:.3f}s wall time")
    assert job.status == "completed" and job.result == {"rows": 3}
    assert len(job.steps) == 100 and len(job.step("s0").attempts) == 4
    assert job.started_at is not None and job.started_at - START == DAY
    assert sim.now - START >= DAY + 3 * 300


TIMED = """
workflows:
  - name: timed
    steps:
      - {name: slow, retries: 1, timeout: 30}
"""


async def test_an_unanswered_request_times_out_and_is_retried():
    sim = Simulation(parse_workflows(TIMED))

    def slow(data: dict[str, Any]) -> dict[str, Any]:
        raise NoReply

    sim.serve("slow", slow)
    job_id = await sim.start("timed")
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.status == "failed"
    attempts = job.step("slow").attempts
    assert [(a.outcome, a.reason) for a in attempts] == [
        ("retrying", "timeout"),
        ("failed", "timeout"),
    ]
    assert attempts[0].ended_at - attempts[0].sent_at == 30


WAITING = """
workflows:
  - name: approval
    steps:
      - {name: draft}
      - {name: approve, wait: true, depends: [draft], timeout: 3600}
      - {name: publish, depends: [approve]}
"""


async def test_a_waiting_step_takes_a_signal_and_its_timeout_runs_on_the_virtual_clock():
    sim = Simulation(parse_workflows(WAITING))
    sim.serve("draft", lambda data: {"text": "hello"})
    sim.serve("publish", lambda data: {"published": data["ok"]})  # the signal is its input
    signalled = await sim.start("approval")
    timed_out = await sim.start("approval")
    await sim.run_until_idle()  # both drafted, both wait: idle means nothing left to send
    assert sim.job(signalled).step("approve").status == "waiting"
    await sim.signal(signalled, "approve", {"ok": True})
    await sim.run_until_idle()
    assert sim.job(signalled).result == {"published": True}
    await sim.advance(3600)
    assert sim.job(timed_out).status == "failed"
    with pytest.raises(SimulationError, match="approve"):
        await sim.signal(timed_out, "approve", {"ok": True})


FAN = """
workflows:
  - name: fan
    steps:
      - {name: each, task: square}
    tasks:
      - name: square
        itemListKey: items
        steps:
          - name: sq
"""


async def test_a_task_step_fans_out_to_children_and_gathers_in_order():
    sim = Simulation(parse_workflows(FAN))
    sim.serve("sq", lambda data: {"item": data["item"] ** 2})
    job_id = await sim.start("fan", {"items": [1, 2, 3]})
    await sim.run_until_idle()
    assert sim.job(job_id).result == {"items": [1, 4, 9]}
    children = [j for j in sim.jobs if j.parent == job_id]
    assert len(children) == 3 and all(c.status == "completed" for c in children)


META = """
workflows:
  - name: meta
    steps:
      - {name: tag, queue: tagging}
      - {name: read, depends: [tag]}
"""


async def test_a_pyworker_workers_handlers_serve_their_queues_with_context_and_meta():
    worker = Worker()

    @worker.step("tagging")
    async def tag(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        ctx.patch_meta({"tagged_by": ctx.step})
        return {"job": ctx.job_id, "attempt": ctx.attempt, "tenant": ctx.meta.get("tenant")}

    @worker.step("read")
    def read(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        return {**data, "meta": dict(ctx.meta)}

    sim = Simulation(parse_workflows(META))
    sim.serve_worker(worker)
    job_id = await sim.start("meta", {}, meta={"tenant": "acme"})
    await sim.run_until_idle()
    result = sim.job(job_id).result
    assert result == {
        "job": job_id, "attempt": 1, "tenant": "acme",
        "meta": {"tenant": "acme", "tagged_by": "tag"},
    }  # fmt: skip


HTTP = """
workflows:
  - name: hooks
    steps:
      - name: notify
        retries: 1
        http:
          url: "https://hooks.example.com/notify"
          headers: {Authorization: "Bearer ${HOOK_TOKEN}"}
"""


async def test_http_steps_go_through_the_bridges_request_and_answer_rules():
    seen: list[httpx.Request] = []

    def respond(request: httpx.Request) -> Any:
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(503, text="busy")
        return {"delivered": True}

    sim = Simulation(parse_workflows(HTTP))
    sim.serve_http(respond, environ={"HOOK_TOKEN": "s3cret"})
    job_id = await sim.start("hooks", {"msg": "hi"})
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.status == "completed" and job.result == {"delivered": True}
    assert "503" in (job.step("notify").attempts[0].message or "")
    assert seen[0].headers["Authorization"] == "Bearer s3cret"
    assert seen[0].headers["X-WM-Job-Id"] == job_id and seen[0].content == b'{"msg": "hi"}'


SCHEDULED = """
workflows:
  - name: hourly
    schedules:
      - {name: tick, every: 3600, payload: {source: schedule}}
    steps:
      - name: report
"""


async def test_schedules_fire_as_the_clock_advances():
    sim = Simulation(parse_workflows(SCHEDULED))
    sim.serve("report", lambda data: data)
    await sim.advance(3 * 3600)
    jobs = [j for j in sim.jobs if j.workflow == "hourly"]
    assert len(jobs) == 3 and all(j.result == {"source": "schedule"} for j in jobs)
    assert [j.started_at for j in jobs] == [START + 3600 * k for k in (1, 2, 3)]


async def test_cancel_and_retry_are_calls():
    sim = Simulation(parse_workflows(RETRIED))
    sim.serve("fetch", _counting_failures(10)[0])
    sim.serve("store", lambda data: data)
    failed = await sim.start("retried")
    await sim.run_until_idle()
    assert sim.job(failed).status == "failed"
    sim.serve("fetch", lambda data: {"rows": 1})  # fixed: the retry runs from the failed step
    await sim.retry(failed)
    await sim.run_until_idle()
    assert sim.job(failed).status == "completed"
    cancelled = await sim.start("retried")
    await sim.cancel(cancelled)
    assert sim.job(cancelled).status == "cancelled"
    with pytest.raises(SimulationError):
        await sim.cancel(cancelled)


async def test_mistakes_are_named():
    sim = Simulation(parse_workflows(RETRIED))
    with pytest.raises(SimulationError, match="unknown workflow 'retryd'"):
        await sim.start("retryd")
    await sim.start("retried")
    with pytest.raises(UnservedStep, match="sim.serve\\('fetch', handler\\)"):
        await sim.run_until_idle()


def test_a_bad_workflow_file_is_refused_with_its_line(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("workflows:\n  - name: x\n    steps:\n      - {name: a, retries: -1}\n")
    with pytest.raises(ConfigError, match="bad.yaml:4"):
        Simulation.load(path)
