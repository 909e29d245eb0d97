"""Views of the whole cluster asked of one manager: `GET /metrics/cluster` sums every manager's
metrics, and `GET /api/events` without `job` carries every manager's events, resuming each
one's after a reconnect with the merged stream's cursor. Two managers, real processes."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from workflow_manager.api.mergedevents import parse_cursor
from workflow_manager.events.sse import SseMessage, read_events

from .rig import Member, ids_in_partition
from .test_forwarding import ask, cluster_view, job_status, settled_pair

P = "workflow_manager_"


def completed(text: str) -> float:
    """chaos-counts jobs ended completed, in an exposition text."""
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == f"{P}jobs_finished_total"
        and s.labels == {"workflow": "chaos-counts", "status": "completed"}
    )


def gauge(text: str, name: str) -> float:
    [value] = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]
    return value


async def run_job(owner: Member, job_id: str, n: int) -> None:
    """Submit a chaos-counts job to the manager running its partition."""
    submitted = await ask(owner, "POST", f"/api/workflow/chaos-counts?id={job_id}", {"n": n})
    assert submitted.status_code == 200, submitted.text


async def until_completed(member: Member, job_ids: list[str]) -> None:
    deadline = asyncio.get_running_loop().time() + 60
    for job_id in job_ids:
        while (status := await job_status(member, job_id)) != "completed":
            assert status in ("running", "queued"), status
            assert asyncio.get_running_loop().time() < deadline, f"{job_id}: {status}"
            await asyncio.sleep(0.1)


async def read_until(
    member: Member, done: set[str], opened: asyncio.Event, last_id: str | None = None
) -> list[SseMessage]:
    """The unfiltered stream of `member` (resumed after `last_id`), read until every job of
    `done` has sent its job.completed."""
    got: list[SseMessage] = []
    left = set(done)
    headers = {"Last-Event-ID": last_id} if last_id else {}
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=60.0)) as http:
        url = f"{member.api_url}/api/events"
        async with http.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            opened.set()
            async for message in read_events(response.aiter_lines()):
                got.append(message)
                data: Any = message.json()
                if message.event == "job.completed":
                    left.discard(data["job"])
                if not left:
                    return got
    raise AssertionError(f"the stream ended before {left} completed: {got}")


def events_of(messages: list[SseMessage], job_id: str) -> list[str]:
    return [m.event for m in messages if m.event.startswith("job.") and m.json()["job"] == job_id]


@pytest.mark.timeout(150)
async def test_one_manager_answers_for_the_clusters_metrics_and_events(cluster):
    first, second, partition = await settled_pair(cluster)
    view = await cluster_view(second)
    theirs = next(le["partition"] for le in view["leases"] if le["owner"] == second.owner)
    x, y = ids_in_partition(partition, cluster.partitions, 2)  # first runs them
    [z] = ids_in_partition(theirs, cluster.partitions, 1)  # second runs it
    await cluster.start_worker()

    # Followed on second, first's job's events come on second's stream.
    opened = asyncio.Event()
    reading = asyncio.create_task(read_until(second, {x}, opened))
    await asyncio.wait_for(opened.wait(), 30)
    await run_job(first, x, 1)
    before = await asyncio.wait_for(reading, 60)
    assert events_of(before, x) == ["job.started", "job.completed"], before
    cursor = before[-1].id
    assert cursor is not None and set(parse_cursor(cursor) or {}) == {first.owner, second.owner}

    # While no one follows, a job on each manager runs; the cursor resumes both streams.
    await run_job(first, y, 2)
    await run_job(second, z, 3)
    await until_completed(first, [y, z])
    after = await asyncio.wait_for(read_until(second, {y, z}, asyncio.Event(), cursor), 60)
    assert events_of(after, y) == ["job.started", "job.completed"], after  # no gap
    assert events_of(after, z) == ["job.started", "job.completed"], after
    assert x not in {m.json().get("job") for m in after}  # nothing twice
    assert not [m for m in after if m.event in ("reset", "member")], after

    # Each manager counts the jobs it ran; either one's /metrics/cluster counts them all.
    own = [(await ask(member, "GET", "/metrics")).text for member in (first, second)]
    assert [completed(text) for text in own] == [2.0, 1.0]
    for member in (first, second):
        summed = await ask(member, "GET", "/metrics/cluster")
        assert summed.status_code == 200, summed.text
        assert completed(summed.text) == 3.0
        assert gauge(summed.text, f"{P}cluster_members_summed") == 2.0
        assert gauge(summed.text, f"{P}cluster_members_unreached") == 0.0
        assert gauge(summed.text, f"{P}partitions_owned") == cluster.partitions
