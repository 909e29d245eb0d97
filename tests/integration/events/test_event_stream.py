"""`GET /api/events` of a real manager process over real HTTP, with real workers."""

from __future__ import annotations

import uuid

from workflow_manager.events.sse import read_events


async def _take(lines, count: int) -> list:
    messages = read_events(lines)
    return [await anext(messages) for _ in range(count)]


async def test_a_job_streams_its_events_in_order_and_a_resume_misses_nothing(site):
    running = await site()
    job_id = str(uuid.uuid4())
    params = {"job": job_id}
    async with running.http.stream("GET", "/api/events", params=params) as whole:
        whole_lines = whole.aiter_lines()
        async with running.http.stream("GET", "/api/events", params=params) as early:
            await running.submit("bad", {}, job_id)
            seen = await _take(early.aiter_lines(), 2)
        # Gone after two events; the job goes on while it is away.
        await running.start_worker()
        everything = await _take(whole_lines, 6)
        assert [m.event for m in everything] == [
            "job.started", "step.dispatched", "step.completed", "step.dispatched",
            "step.failed", "job.failed",
        ]  # fmt: skip
        headers = {"Last-Event-ID": seen[-1].id}
        async with running.http.stream(
            "GET", "/api/events", params=params, headers=headers
        ) as resumed:
            rest = await _take(resumed.aiter_lines(), 4)
    assert [(m.id, m.data) for m in seen + rest] == [(m.id, m.data) for m in everything]


async def test_bad_query_answers_400_over_http(site):
    running = await site()
    response = await running.http.get("/api/events", params={"job": "42"})
    assert response.status_code == 400
    assert "query parameter 'job' '42' is not a UUID" in response.json()["error"]


async def test_the_manager_stops_promptly_with_a_stream_open(site):
    running = await site()
    async with running.http.stream("GET", "/api/events") as response:
        lines = response.aiter_lines()
        assert await anext(lines) == ": connected"
        # Its HTTP server waits for open responses: the stream must end for it to stop.
        assert await running.manager.process.stop(timeout_s=10) == 0
        assert [line async for line in lines] == [""]  # the end of the comment, then the end
