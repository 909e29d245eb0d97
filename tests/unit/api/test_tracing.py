"""Traces through the API: the submit route's traceparent, and trace_id in GET /api/job/{id}."""

from __future__ import annotations

import re

from workflow_manager.engine.traceids import step_span_id

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
SPAN_ID = "00f067aa0ba902b7"


async def _submit(client, workflow: str, payload: dict, **headers: str) -> str:
    response = await client.post(
        f"/api/workflow/{workflow}?id={JOB}", json=payload, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()["id"]


async def _trace_id(client, job_id: str) -> str:
    response = await client.get(f"/api/job/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()["trace_id"]


async def test_the_requests_traceparent_becomes_the_jobs_trace(client, service):
    job_id = await _submit(client, "wordcount", {}, traceparent=CALLER)
    assert await _trace_id(client, job_id) == TRACE_ID
    assert service.state.jobs[job_id].trace_parent == SPAN_ID
    (request,) = service.transport.sent_to("split")
    assert request.headers["traceparent"] == f"00-{TRACE_ID}-{step_span_id(JOB, 'split', 1)}-01"


async def test_a_malformed_traceparent_still_starts_the_job_in_a_trace_of_its_own(client, service):
    job_id = await _submit(client, "wordcount", {}, traceparent="00-nonsense-01")
    trace_id = await _trace_id(client, job_id)
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id) and trace_id.strip("0")
    assert service.state.jobs[job_id].trace_parent is None


async def test_children_and_finished_jobs_show_the_top_level_trace(client, service):
    await _submit(
        client, "books", {"books": [{"title": "a"}]}, traceparent=f"00-{TRACE_ID}-{SPAN_ID}-01"
    )
    await service.reply(JOB, "shelve", {"books": [{"title": "a"}]})
    (child_id,) = service.state.jobs[JOB].steps["each"].children or []
    assert await _trace_id(client, child_id) == TRACE_ID
    await service.reply(child_id, "fetch")
    await service.reply(child_id, "tally", {"book": 1})
    await service.reply(JOB, "total")
    assert JOB not in service.state.jobs  # left memory: read back from the journal
    assert await _trace_id(client, JOB) == TRACE_ID
    assert await _trace_id(client, child_id) == TRACE_ID
