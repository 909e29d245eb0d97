"""Trace context through the pipeline: every request of a job (children too) in the job's trace."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

from workflow_manager.engine.traceids import (
    TraceParent,
    job_span_id,
    parse_traceparent,
    step_span_id,
)
from workflow_manager.transport import Outbound

from .conftest import QUEUE

FANNED = """
workflows:
  - name: fanned
    steps:
      - name: a
      - {name: each, task: per, depends: [a]}
      - {name: z, depends: [each]}
    tasks:
      - name: per
        itemListKey: items
        steps:
          - name: work
"""
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CALLER = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


def _trigger(rig, payload: dict, job_id: str, **headers: str):
    return rig.transport.deliver(
        f"{QUEUE}.jobs", json.dumps(payload).encode(), correlation_id=job_id,
        headers={"workflow": "fanned", **headers},
    )  # fmt: skip


def _span_of(message: Outbound) -> tuple[str, str]:
    """(trace id, span id) of a request's traceparent, which must be a valid one."""
    parsed = parse_traceparent(message.headers["traceparent"])
    assert parsed is not None, message.headers
    assert message.headers["traceparent"] == f"00-{parsed.trace_id}-{parsed.span_id}-01"
    return parsed.trace_id, parsed.span_id


async def _run_fanned(rig, job_id: str) -> list[Outbound]:
    """Run `fanned` (two children) to its last request; every request sent, in order."""
    first = await rig.request("a")
    await rig.answer(first, {"items": [1, 2]})[1]
    works = [await rig.request("work", n) for n in (1, 2)]
    for work in works:
        await rig.answer(work, {"item": 0})[1]
    last = await rig.request("z")
    return [first, *works, last]


async def test_every_request_of_a_job_and_its_children_carries_a_span_of_the_jobs_trace(start):
    rig = await start(FANNED)
    job_id = str(uuid.uuid4())
    await _trigger(rig, {}, job_id)[1]
    job = rig.orchestrator.state.jobs[job_id]
    assert len(job.trace_id) == 32 and job.trace_parent is None  # a new trace, no caller
    first, *works, last = await _run_fanned(rig, job_id)

    spans = [_span_of(m) for m in (first, *works, last)]
    assert {trace for trace, _ in spans} == {job.trace_id}
    children = [m.correlation_id.split(":")[0] for m in works]
    expected = [
        step_span_id(job_id, "a", 1),
        *(step_span_id(child, "work", 1) for child in children),
        step_span_id(job_id, "z", 1),
    ]
    assert [span for _, span in spans] == expected
    # A child's own span hangs from its task step's span, in its top-level job's trace.
    for child_id in children:
        child = rig.orchestrator.state.jobs.get(child_id) or await rig.orchestrator.find_job(
            child_id
        )
        assert child is not None
        assert (child.trace_id, child.trace_parent) == (
            job.trace_id,
            step_span_id(job_id, "each", 0),
        )


async def test_a_triggers_traceparent_is_the_jobs_trace_and_its_span_the_job_spans_parent(start):
    rig = await start(FANNED)
    job_id = str(uuid.uuid4())
    await _trigger(rig, {}, job_id, traceparent=CALLER)[1]
    job = rig.orchestrator.state.jobs[job_id]
    assert (job.trace_id, job.trace_parent) == (CALLER_TRACE, CALLER_SPAN)
    assert job_span_id(job_id) != CALLER_SPAN
    requests = await _run_fanned(rig, job_id)
    assert {_span_of(m)[0] for m in requests} == {CALLER_TRACE}


async def test_a_malformed_traceparent_is_ignored_and_the_job_starts_its_own_trace(start, caplog):
    caplog.set_level(logging.DEBUG, logger="workflow_manager.traces")
    rig = await start(FANNED)
    job_id = str(uuid.uuid4())
    bad = f"00-{'0' * 32}-{CALLER_SPAN}-01"  # an all-zero trace id is invalid
    delivery, handled = _trigger(rig, {}, job_id, traceparent=bad)
    await handled
    assert delivery in rig.transport.acked and not rig.transport.sent_to(f"{QUEUE}.dead")
    trace_id, _ = _span_of(await rig.request("a"))
    assert trace_id == rig.orchestrator.state.jobs[job_id].trace_id
    assert trace_id.strip("0") and trace_id != CALLER_TRACE
    assert [r.getMessage() for r in caplog.records] == [
        f"trigger: ignoring malformed traceparent {bad!r}; the job starts a new trace"
    ]


async def test_jobs_without_a_caller_trace_each_start_a_different_trace(start):
    rig = await start(FANNED)
    first = await rig.orchestrator.submit("fanned", {})
    second = await rig.orchestrator.submit("fanned", {})
    jobs = rig.orchestrator.state.jobs
    assert jobs[first].trace_id != jobs[second].trace_id


async def test_after_recovery_the_republished_requests_carry_the_same_traceparent(start):
    rig = await start(FANNED)
    job_id = str(uuid.uuid4())
    # A job whose first request is journaled but never confirmed (the broker holds it).
    rig.transport.confirming.clear()
    caller = TraceParent(CALLER_TRACE, CALLER_SPAN)
    submitting = asyncio.ensure_future(rig.orchestrator.submit("fanned", {}, job_id, caller))
    await rig.transport.holding.wait()
    await rig.orchestrator.journal.flush()
    submitting.cancel()
    rig.transport.confirming.set()

    again = await start(FANNED)  # a new manager on the same journal file
    (resent,) = again.transport.sent_to("a")
    assert resent.headers["traceparent"] == f"00-{CALLER_TRACE}-{step_span_id(job_id, 'a', 1)}-01"
    job = again.orchestrator.state.jobs[job_id]
    assert (job.trace_id, job.trace_parent) == (CALLER_TRACE, CALLER_SPAN)
    # The fan-out after recovery: the children are in the replayed job's trace.
    await again.answer(resent, {"items": [1]})[1]
    assert _span_of(await again.request("work"))[0] == CALLER_TRACE
