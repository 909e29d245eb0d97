"""The reads about every job answer the same on any manager: the running jobs and workflows of
the whole cluster, and a job's event stream followed on a manager that does not run it (the
owner's, relayed). Two managers, real processes."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import httpx
import pytest

from workflow_manager.events.sse import SseMessage, read_events

from ..harness import Process
from .rig import ids_in_partition
from .test_forwarding import ANSWERED_BY, ask, settled_pair


async def read_json(member: Any, path: str) -> Any:
    response = await ask(member, "GET", path)
    assert response.status_code == 200, response.text
    return response.json()


async def own_answer(member: Any, path: str) -> Any:
    """`path` as `member` answers it itself (having asked the others)."""
    response = await ask(member, "GET", path)
    assert response.status_code == 200, response.text
    assert ANSWERED_BY not in response.headers
    return response.json()


async def children_of(member: Any, job_id: str) -> list[str]:
    """The child jobs of `job_id` once its task step has made them (asked of `member`)."""
    deadline = asyncio.get_running_loop().time() + 30
    while not (job := await read_json(member, f"/api/job/{job_id}")).get("running"):
        assert asyncio.get_running_loop().time() < deadline, f"no children: {job}"
        await asyncio.sleep(0.1)
    return job["running"][0]["tasks"]


@pytest.mark.timeout(120)
async def test_every_manager_lists_the_running_jobs_and_workflows_of_both(cluster):
    first, second, partition = await settled_pair(cluster)
    view = await read_json(second, "/api/cluster")
    theirs = next(le["partition"] for le in view["leases"] if le["owner"] == second.owner)
    [one] = ids_in_partition(partition, cluster.partitions, 1)  # first runs it
    [two] = ids_in_partition(theirs, cluster.partitions, 1)  # second runs it
    await cluster.start_worker()
    for job_id in (one, two):  # each sent to the manager that does not run it
        other = second if job_id == one else first
        submitted = await ask(other, "POST", f"/api/workflow/gated?id={job_id}", {"n": 1})
        assert submitted.status_code == 200, submitted.text
    children = {job_id: await children_of(first, job_id) for job_id in (one, two)}

    jobs = [await own_answer(member, "/api/jobs") for member in (first, second)]
    assert jobs[0] == jobs[1]
    names = sorted([(first.owner, one), (second.owner, two)])
    expected = [id_ for _, root in names for id_ in (root, *children[root])]  # by manager name
    assert jobs[0] == {"jobs": expected}
    workflows = [await own_answer(member, "/api/workflows") for member in (first, second)]
    assert workflows[0] == workflows[1]
    assert {w["name"]: w["job_count"] for w in workflows[0]}["gated"] == 2
    # The journal has every manager's top-level jobs: the same answer, with no asking.
    gated = [await own_answer(member, "/api/workflow/gated") for member in (first, second)]
    assert gated[0] == gated[1] and sorted(gated[0]["running"]) == sorted([one, two])

    # Killed, first cannot be asked until its partitions are taken: its top-level job still
    # shows (from the journal, or from second once it runs it), and second's whole tree.
    await first.process.stop(signal.SIGKILL)
    left = (await own_answer(second, "/api/jobs"))["jobs"]
    assert one in left and {two, *children[two]} <= set(left), left


async def stream_until_completed(
    member: Any, job_id: str, opened: asyncio.Event
) -> tuple[str | None, list[SseMessage]]:
    """`GET /api/events?job=` on `member`, read until the job's `job.completed`: who answered
    (the `x-wm-answered-by` header) and the messages."""
    got: list[SseMessage] = []
    timeout = httpx.Timeout(10.0, read=60.0)
    async with httpx.AsyncClient(timeout=timeout) as http:
        url = f"{member.api_url}/api/events"
        async with http.stream("GET", url, params={"job": job_id}) as response:
            assert response.status_code == 200, await response.aread()
            opened.set()
            async for message in read_events(response.aiter_lines()):
                got.append(message)
                if message.event == "job.completed" and message.json()["job"] == job_id:
                    return response.headers.get(ANSWERED_BY), got
    raise AssertionError(f"the stream ended before job.completed: {got}")


@pytest.mark.timeout(120)
async def test_a_jobs_events_reach_a_client_of_the_manager_that_does_not_run_it(cluster):
    owner, other, partition = await settled_pair(cluster)
    [job_id] = ids_in_partition(partition, cluster.partitions, 1)
    # No worker yet: the job waits for its first step while the clients connect.
    submitted = await ask(other, "POST", f"/api/workflow/chaos-counts?id={job_id}", {"n": 4})
    assert submitted.status_code == 200, submitted.text
    opened = asyncio.Event()
    streamed = asyncio.create_task(stream_until_completed(other, job_id, opened))
    watch = await Process.start(
        "watch",
        sys.executable,
        "-m",
        "workflow_manager",
        "watch",
        job_id,
        "--api-url",
        other.api_url,
    )
    await watch.wait_for_line(rf"job {job_id}  chaos-counts  running")
    await asyncio.wait_for(opened.wait(), 30)
    await cluster.start_worker()

    answered_by, messages = await asyncio.wait_for(streamed, 60)
    assert answered_by == owner.owner  # the owner's stream, relayed
    own = [m.json() for m in messages if m.json()["job"] == job_id]
    completed = {e["step"] for e in own if e["type"] == "step.completed"}
    assert completed == {"split", "doubled", "sum", "title"}, own
    assert own[-1]["type"] == "job.completed" and own[-1]["status"] == "completed"
    children = {m.json()["job"] for m in messages} - {job_id}
    assert len(children) == 10  # the children's events come too, as from the owner

    await asyncio.wait_for(watch.proc.wait(), 30)
    assert await watch.stop() == 0, watch.output
    assert "step.completed sum attempt 1" in watch.output, watch.output
    assert f"job {job_id}  chaos-counts  completed" in watch.output, watch.output


async def stream_until_it_ends(member: Any, job_id: str, opened: asyncio.Event) -> None:
    """`GET /api/events?job=` on `member`, followed until the manager ends the stream."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None)) as http:
        url = f"{member.api_url}/api/events"
        async with http.stream("GET", url, params={"job": job_id}) as response:
            assert response.status_code == 200, await response.aread()
            async for line in response.aiter_lines():
                if line.startswith(": connected"):
                    opened.set()


@pytest.mark.timeout(120)
async def test_a_stream_on_the_owner_ends_when_its_job_is_handed_over(cluster):
    # One job in each partition, waiting for a worker; each followed on the one manager.
    first = await cluster.start_manager()
    await first.process.wait_for_line(rf"holds {cluster.partitions}\b")
    jobs = {k: ids_in_partition(k, cluster.partitions, 1)[0] for k in range(cluster.partitions)}
    streams, opened = {}, {}
    for partition, job_id in jobs.items():
        submitted = await ask(first, "POST", f"/api/workflow/chaos-counts?id={job_id}", {"n": 1})
        assert submitted.status_code == 200, submitted.text
        opened[partition] = asyncio.Event()
        streams[partition] = asyncio.create_task(
            stream_until_it_ends(first, job_id, opened[partition])
        )
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in opened.values())), 30)

    # A second manager joins: the first hands half the partitions over, and the streams of
    # their jobs end (their clients reconnect and are routed to the new owner); the rest stay.
    second = await cluster.start_manager()
    await cluster.balanced([first, second])
    await first.process.wait_for_line(r"handed partitions .* over")
    moved = {p for (p,) in cluster.query(
        "SELECT partition FROM partition_leases WHERE owner = %s", (second.owner,)
    )}  # fmt: skip
    assert len(moved) == cluster.partitions // 2
    await asyncio.wait_for(asyncio.gather(*(streams[p] for p in moved)), 20)
    kept = [streams[p] for p in jobs if p not in moved]
    assert not any(task.done() for task in kept)
    for task in kept:
        task.cancel()
    relayed = await ask(first, "GET", f"/api/job/{jobs[min(moved)]}")
    assert relayed.headers[ANSWERED_BY] == second.owner  # asked again: the new owner answers
