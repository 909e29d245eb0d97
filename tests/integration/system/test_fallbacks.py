"""`fallback` end to end: a step that fails for good is recovered by its fallback's worker, or
fails its job with both errors; a real manager and real workers."""

from __future__ import annotations

import json
import signal
import uuid

from .test_conditions import events_until_end

WORKFLOWS = """
workflows:
  - name: charged
    steps:
      - {name: start, queue: "{p}.start"}
      - name: boom-charge
        depends: [start]
        queue: "{p}.boom-charge"
        retries: 1
        retry_backoff: {initial: 0, max: 0}
        fallback: {name: invoice, queue: "{p}.invoice"}
      - {name: ship, depends: [boom-charge], queue: "{p}.ship"}
  - name: doomed
    steps:
      - name: boom-charge
        queue: "{p}.boom-charge"
        fallback: {name: boom-invoice, queue: "{p}.boom-invoice", retries: 1,
                   retry_backoff: {initial: 0, max: 0}}
      - {name: ship, depends: [boom-charge], queue: "{p}.ship"}
"""
QUEUES = ["start", "boom-charge", "invoice", "ship", "boom-invoice"]


async def test_a_step_failing_after_its_retries_is_recovered_by_its_fallback(system):
    sys = await system(WORKFLOWS, step_queues=QUEUES)
    job_id = str(uuid.uuid4())
    async with sys.http.stream("GET", "/api/events", params={"job": job_id}) as stream:
        outcome = await sys.run("charged", {"order": 7}, job_id)
        events = await events_until_end(stream)
    assert outcome.status == "completed", outcome.body
    # ship ran on the fallback's output: the fallback got the step's input plus the error.
    assert outcome.body["path"] == ["start", "invoice", "ship"]
    assert outcome.body["order"] == 7
    error = outcome.body["error"]
    assert error["step"] == "boom-charge" and error["attempts"] == 2
    assert "boom in boom-charge" in error["message"]
    kinds = [(e["type"], e.get("step")) for e in events]
    assert kinds.index(("step.failed", "boom-charge")) < kinds.index(("step.dispatched", "invoice"))
    assert kinds.index(("step.completed", "invoice")) < kinds.index(
        ("step.recovered", "boom-charge")
    )
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    steps = {step["name"]: step for step in page["steps"]}
    assert steps["boom-charge"]["status"] == "recovered"
    assert steps["boom-charge"]["fallback"] == "invoice"
    assert "boom in boom-charge" in steps["boom-charge"]["error"]
    assert steps["invoice"]["kind"] == "fallback" and steps["invoice"]["recovers"] == "boom-charge"
    assert steps["invoice"]["status"] == "completed" and steps["invoice"]["attempts"] == 1


async def test_a_failing_fallback_fails_the_job_with_both_errors_visible(system):
    sys = await system(WORKFLOWS, step_queues=QUEUES)
    job_id = str(uuid.uuid4())
    outcome = await sys.run("doomed", {}, job_id)
    assert outcome.status == "failed"
    error = outcome.body["error"]
    assert error["step"] == "boom-charge"
    assert error["message"] == (
        "ValueError: boom in boom-charge; its fallback 'boom-invoice' failed too: "
        "ValueError: boom in boom-invoice"
    )
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    assert job["status"] == "failed" and job["error"] == error
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    steps = {step["name"]: step for step in page["steps"]}
    assert steps["boom-charge"]["status"] == "failed"
    assert steps["boom-invoice"]["status"] == "failed"
    assert steps["boom-invoice"]["attempts"] == 2  # its own retry
    assert steps["ship"]["status"] == "pending"


MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: charge, queue: "{p}.charge", fallback: {name: invoice, queue: "{p}.invoice"}}
      - {name: ship, depends: [charge], queue: "{p}.ship"}
"""


async def test_a_fallback_in_flight_survives_a_kill_9(system):
    sys = await system(MANUAL)
    job_id = str(uuid.uuid4())
    await sys.trigger("manual", {"order": 1}, job_id)
    await sys.answer(await sys.take("charge"), b"{}", **{"x-error": "card declined"})
    invoice = await sys.take("invoice")
    assert invoice.correlation_id == f"{job_id}:invoice"
    await sys.restart(signal.SIGKILL)
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    steps = {step["name"]: step for step in page["steps"]}
    assert steps["charge"]["status"] == "failed" and steps["invoice"]["status"] == "running"
    await sys.answer(invoice, b'{"invoice": "I-9"}')
    ship = await sys.take("ship")
    assert json.loads(ship.body) == {"invoice": "I-9"}
    await sys.answer(ship, b"{}")
    assert (await sys.outcome_of(job_id, "manual")).status == "completed"
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    assert next(s for s in page["steps"] if s["name"] == "charge")["status"] == "recovered"
