"""Any manager answers the HTTP API about a job another manager runs, as that one does: it
forwards the request to the owner (the manager holding the job's partition, as GET
/api/cluster names it) and returns the owner's answer. Two managers, real processes."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import aio_pika
import httpx
import pytest

from ..durability import helpers as chaos
from .rig import ClusterRig, Member, comparable, ids_in_partition

# The rig's workflows plus two with waiting steps: one whose children wait (so a child job
# runs for as long as the test likes), one whose only step waits 3 s before it fails.
WAITING = """
  - name: gated
    steps:
      - {name: split, queue: "{p}.split"}
      - {name: each, task: gate, depends: [split]}
    tasks:
      - name: gate
        itemListKey: items
        steps:
          - {name: approve, wait: true}
  - name: approval
    steps:
      - {name: approve, wait: true, timeout: 3}
"""
FORWARDED_BY = "x-wm-forwarded-by"
ANSWERED_BY = "x-wm-answered-by"


async def cluster_view(member: Member) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(f"{member.api_url}/api/cluster")
    response.raise_for_status()
    return response.json()


async def settled_pair(cluster: ClusterRig) -> tuple[Member, Member, int]:
    """Two managers sharing the partitions evenly, as GET /api/cluster shows them: one of
    them, one partition it runs, and the other."""
    cluster.config.write_text((chaos.WORKFLOW + WAITING).replace("{p}", cluster.prefix))
    first, second = await cluster.start_manager(), await cluster.start_manager()
    await cluster.balanced([first, second])
    view = await cluster_view(second)
    # Each advertises its API where the other reaches it (the default: its host and port).
    urls = {m["name"]: m["api_url"] for m in view["managers"]}
    assert urls == {first.owner: first.api_url, second.owner: second.api_url}, view
    lease = next(lease for lease in view["leases"] if lease["owner"] == first.owner)
    return first, second, lease["partition"]


async def ask(member: Member, method: str, path: str, body: Any = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=15) as http:
        return await http.request(method, member.api_url + path, json=body)


async def same_answer(owner: Member, other: Member, path: str) -> dict[str, Any]:
    """GET `path` from both: the other forwards it to the owner, and the answers agree."""
    mine, theirs = await ask(owner, "GET", path), await ask(other, "GET", path)
    assert (mine.status_code, theirs.status_code) == (200, 200), (mine.text, theirs.text)
    assert comparable(mine.json()) == comparable(theirs.json())
    return mine.json()


async def job_status(member: Member, job_id: str) -> str:
    return (await ask(member, "GET", f"/api/job/{job_id}")).json()["status"]


async def eventually(member: Member, job_id: str, status: str) -> None:
    deadline = asyncio.get_running_loop().time() + 30
    while (got := await job_status(member, job_id)) != status:
        assert asyncio.get_running_loop().time() < deadline, f"{job_id} is {got}, not {status}"
        await asyncio.sleep(0.1)


@pytest.mark.timeout(120)
async def test_submit_retry_and_signal_sent_to_a_non_owner_take_effect_on_the_owner(cluster):
    owner, other, partition = await settled_pair(cluster)
    job_id = ids_in_partition(partition, cluster.partitions, 1)[0]

    submitted = await ask(other, "POST", f"/api/workflow/approval?id={job_id}", {"n": 1})
    assert (submitted.status_code, submitted.json()) == (200, {"id": job_id}), submitted.text
    assert submitted.headers[ANSWERED_BY] == owner.owner
    again = await ask(other, "POST", f"/api/workflow/approval?id={job_id}", {"n": 1})
    assert again.status_code == 409 and job_id in again.json()["error"]

    await eventually(other, job_id, "failed")  # its waiting step timed out after 3 s
    retried = await ask(other, "POST", f"/api/job/{job_id}/retry")
    assert retried.status_code == 200, retried.text
    assert retried.headers[ANSWERED_BY] == owner.owner
    assert retried.json()["status"] == "running"
    assert [s["name"] for s in retried.json()["waiting"]] == ["approve"]

    signalled = await ask(other, "POST", f"/api/job/{job_id}/signal/approve", {"ok": True})
    assert signalled.status_code == 200, signalled.text
    assert signalled.json() == {"job": job_id, "step": "approve", "status": "completed"}
    await eventually(owner, job_id, "completed")
    done = await same_answer(owner, other, f"/api/job/{job_id}")
    assert {"name": "approve", "message": {"ok": True}}.items() <= done["completed"][1].items()
    twice = await ask(other, "POST", f"/api/job/{job_id}/signal/approve", {"ok": True})
    assert twice.status_code == 409, twice.text


async def gated_job(cluster: ClusterRig) -> tuple[Member, Member, str, list[str]]:
    """A `gated` job submitted through the manager not running it: the owner, the other, the
    job's id and its children, every one of them waiting for its signal."""
    owner, other, partition = await settled_pair(cluster)
    await cluster.start_worker()
    job_id = ids_in_partition(partition, cluster.partitions, 1)[0]
    submitted = await ask(other, "POST", f"/api/workflow/gated?id={job_id}", {"n": 2})
    assert submitted.status_code == 200, submitted.text
    deadline = asyncio.get_running_loop().time() + 30
    while not (root := (await ask(owner, "GET", f"/api/job/{job_id}")).json()).get("running"):
        assert asyncio.get_running_loop().time() < deadline, f"no children: {root}"
        await asyncio.sleep(0.1)
    children = root["running"][0]["tasks"]
    assert len(children) == chaos.CHILDREN_PER_JOB
    return owner, other, job_id, children


@pytest.mark.timeout(120)
async def test_a_running_child_job_reads_the_same_on_a_non_owner_and_cancel_reaches_it(cluster):
    owner, other, job_id, children = await gated_job(cluster)
    child = await same_answer(owner, other, f"/api/job/{children[0]}")
    assert (child["status"], child["parent"]) == ("running", job_id)
    assert [s["name"] for s in child["waiting"]] == ["approve"]
    steps = await same_answer(owner, other, f"/api/job/{children[0]}/steps")
    assert steps["status"] == "running"

    signalled = await ask(other, "POST", f"/api/job/{children[1]}/signal/approve", {"ok": 1})
    assert signalled.json() == {"job": children[1], "step": "approve", "status": "completed"}
    await eventually(other, children[1], "completed")  # ended: read from the journal

    cancelled = await ask(other, "DELETE", f"/api/job/{job_id}")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.headers[ANSWERED_BY] == owner.owner
    await eventually(owner, job_id, "cancelled")
    ended = await same_answer(owner, other, f"/api/job/{job_id}")
    assert ended["status"] == "cancelled"
    again = await ask(other, "DELETE", f"/api/job/{job_id}")
    assert again.status_code == 409, again.text


@pytest.mark.timeout(120)
async def test_amqp_signals_reach_children_that_have_journaled_nothing_but_their_wait(cluster):
    # Every child waits at its first step, so each has only its `waiting` row in the journal.
    # Both managers consume `<queue>.signals`, so some signals reach the one not running the
    # job, which must find each child's partition (its top-level job's) and hand it on.
    owner, other, job_id, children = await gated_job(cluster)
    for child in children:
        message = aio_pika.Message(b'{"ok": true}', correlation_id=f"{child}:approve")
        await cluster.channel.default_exchange.publish(message, f"{cluster.queue}.signals")
    await eventually(other, job_id, "completed")
    for child in children:
        assert await job_status(other, child) == "completed"
    dead = await cluster.channel.declare_queue(f"{cluster.queue}.dead", passive=True)
    assert dead.declaration_result.message_count == 0


@pytest.mark.timeout(90)
async def test_a_request_the_owner_cannot_answer_now_is_a_503_naming_the_partition(cluster):
    owner, other, partition = await settled_pair(cluster)
    job_id, never = ids_in_partition(partition, cluster.partitions, 2)
    # No worker: the job waits for its first step for as long as the test runs.
    submitted = await ask(other, "POST", f"/api/workflow/gated?id={job_id}", {"n": 3})
    assert submitted.status_code == 200, submitted.text
    async with httpx.AsyncClient(timeout=10) as http:
        looped = await http.delete(
            f"{other.api_url}/api/job/{job_id}", headers={FORWARDED_BY: "elsewhere:1"}
        )
    assert looped.status_code == 503, looped.text
    assert looped.headers["retry-after"] == "1"
    assert f"partition {partition}" in looped.json()["error"]
    assert "elsewhere:1 forwarded this request here" in looped.json()["error"]
    unknown = await ask(other, "GET", f"/api/job/{never}")
    assert (unknown.status_code, unknown.json()) == (404, {"error": f"no job {never}"})

    # The owner dies: until its lease expires it cannot be asked (a read answers from the
    # journal meanwhile); then the survivor runs the partition and answers itself.
    await owner.process.stop(signal.SIGKILL)
    gone = await ask(other, "DELETE", f"/api/job/{job_id}")
    assert gone.status_code == 503, gone.text
    assert f"partition {partition}" in gone.json()["error"]
    assert f"its owner {owner.owner} at {owner.api_url} cannot be reached" in gone.json()["error"]
    read = await ask(other, "GET", f"/api/job/{job_id}")
    assert (read.status_code, read.json()["status"]) == (200, "running"), read.text
    deadline = asyncio.get_running_loop().time() + 20
    while (answer := await ask(other, "DELETE", f"/api/job/{job_id}")).status_code == 503:
        assert asyncio.get_running_loop().time() < deadline, answer.text
        await asyncio.sleep(0.2)
    assert answer.status_code == 200 and ANSWERED_BY not in answer.headers, answer.text
    await eventually(other, job_id, "cancelled")
