"""Bulk actions across several managers: `POST /api/jobs/bulk` on any one matches every
manager's jobs, each partition's part is carried out by the manager running it, and
`GET /api/bulk/{id}` on any one sums the parts. Real managers on PostgreSQL."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from workflow_manager.cluster.bulkparts import part_id
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.engine.bulk import bulk_journal_id

from ..durability import helpers as chaos
from .rig import ClusterRig, Member, ids_in_partition, rejoins, until
from .test_forwarding import ask, cluster_view

# Two workflows whose only step waits for a signal (no worker, no timeout): their jobs run
# until something ends them.
HOLDING = """
  - name: hold
    steps:
      - {name: approve, wait: true}
  - name: keep
    steps:
      - {name: approve, wait: true}
  - name: brief
    steps:
      - {name: approve, wait: true, timeout: 1}
"""


async def owners(member: Member) -> dict[int, str]:
    """partition -> the API URL of the manager running it, as GET /api/cluster says."""
    view = await cluster_view(member)
    urls = {m["name"]: m["api_url"] for m in view["managers"]}
    return {lease["partition"]: urls[lease["owner"]] for lease in view["leases"]}


async def submit(http: httpx.AsyncClient, owner_url: str, workflow: str, ids: list[str]) -> None:
    """Submit one `workflow` job per id to the manager running their partition."""
    gate = asyncio.Semaphore(16)

    async def one(job_id: str) -> None:
        async with gate:
            answer = await http.post(f"{owner_url}/api/workflow/{workflow}?id={job_id}", json={})
            assert answer.status_code == 200, answer.text

    await asyncio.gather(*(one(job_id) for job_id in ids))


async def finished(member: Member, bulk_id: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """GET /api/bulk/{id} on `member` until the bulk is finished; its view then."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        answer = await ask(member, "GET", f"/api/bulk/{bulk_id}")
        assert answer.status_code == 200, answer.text
        view = answer.json()
        if view["status"] == "finished":
            return view
        assert asyncio.get_running_loop().time() < deadline, f"bulk not finished: {view}"
        await asyncio.sleep(0.2)


async def trigger(cluster: ClusterRig, workflow: str, ids: list[str]) -> None:
    """Publish one `workflow` trigger per job id to the managers' queue (broker-confirmed)."""
    queue = f"{cluster.queue}.jobs"
    await asyncio.gather(
        *(chaos.publish_trigger(cluster.channel, queue, workflow, {}, i, None) for i in ids)
    )


def cancel_rows(cluster: ClusterRig, ids: list[str]) -> dict[str, int]:
    """job id -> the cancel requests journaled for it."""
    rows = cluster.query(
        "SELECT job_id, count(*) FROM events WHERE kind = 'cancel' AND job_id = ANY(%s)"
        " GROUP BY job_id",
        (ids,),
    )
    return {job_id: int(count) for job_id, count in rows}


def part_done(cluster: ClusterRig, journal_id: str) -> int:
    """How many jobs a bulk (part) has acted on, as its committed rows say."""
    rows = cluster.query(
        "SELECT max((meta::jsonb ->> 'done')::int) FROM events"
        " WHERE job_id = %s AND kind = 'bulk-step'",
        (journal_id,),
    )
    return int(rows[0][0] or 0)


def statuses(cluster: ClusterRig, ids: list[str]) -> dict[str, str]:
    rows = cluster.query("SELECT id, status FROM jobs WHERE id = ANY(%s)", (ids,))
    return {job_id: status for job_id, status in rows}


async def two_managers(cluster: ClusterRig) -> tuple[Member, Member, dict[int, str]]:
    cluster.config.write_text((chaos.WORKFLOW + HOLDING).replace("{p}", cluster.prefix))
    first, second = await cluster.start_manager(), await cluster.start_manager()
    await cluster.balanced([first, second])
    return first, second, await owners(first)


@pytest.mark.timeout(120)
async def test_bulk_cancel_acts_on_every_managers_jobs_once_and_reads_alike_anywhere(cluster):
    first, second, owner_of = await two_managers(cluster)
    assert len(set(owner_of.values())) == 2, owner_of  # both run some partitions
    held: list[str] = []
    kept: list[str] = []
    async with httpx.AsyncClient(timeout=15) as http:
        for partition in range(cluster.partitions):
            hold, keep = (
                ids_in_partition(partition, cluster.partitions, 7),
                ids_in_partition(partition, cluster.partitions, 2),
            )
            await submit(http, owner_of[partition], "hold", hold)
            await submit(http, owner_of[partition], "keep", keep)
            held += hold
            kept += keep

    body = {"action": "cancel", "filter": {"workflow": "hold", "status": "running"}}
    dry = await ask(second, "POST", "/api/jobs/bulk", {**body, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["matched"] == len(held) and "id" not in dry.json()
    asked = await ask(first, "POST", "/api/jobs/bulk", body)
    assert asked.status_code == 202, asked.text
    bulk_id = asked.json()["id"]
    assert asked.json()["matched"] == len(held)
    assert set(asked.json()["sample"]) <= set(held)

    view = await finished(second, bulk_id)
    assert (view["total"], view["done"], view["changed"], view["refused"]) == (len(held),) * 3 + (
        0,
    )
    assert view["action"] == "cancel" and view["filter"]["workflow"] == "hold"
    assert (await ask(first, "GET", f"/api/bulk/{bulk_id}")).json() == view
    await until(
        lambda: set(statuses(cluster, held).values()) == {"cancelled"}, "held jobs cancelled"
    )
    assert set(statuses(cluster, kept).values()) == {"running"}
    assert cancel_rows(cluster, held) == dict.fromkeys(held, 1)
    assert cancel_rows(cluster, kept) == {}

    again = await ask(second, "POST", "/api/jobs/bulk", body)  # none left running: empty
    assert again.status_code == 202 and again.json()["matched"] == 0, again.text
    empty = await finished(first, again.json()["id"])
    assert (empty["total"], empty["done"]) == (0, 0)
    missing = await ask(second, "GET", "/api/bulk/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404


@pytest.mark.timeout(180)
async def test_a_bulk_goes_on_after_its_partition_owner_is_killed(cluster):
    survivor, victim, owner_of = await two_managers(cluster)
    theirs = sorted(k for k, url in owner_of.items() if url == victim.api_url)
    # Most jobs in one of the victim's partitions: its part takes several slices (1,000 a cancel).
    counts = {k: 5 for k in range(cluster.partitions)} | {theirs[0]: 3600}
    held = [
        job_id
        for partition, count in counts.items()
        for job_id in ids_in_partition(partition, cluster.partitions, count)
    ]
    await trigger(cluster, "hold", held)  # as AMQP triggers: 3,600 POSTs take half a minute

    def all_running() -> bool:  # every job there (a trigger is taken a moment later), running
        return list(statuses(cluster, held).values()) == ["running"] * len(held)

    await until(all_running, "every job running", 60)

    body = {"action": "cancel", "filter": {"workflow": "hold"}}
    asked = await ask(survivor, "POST", "/api/jobs/bulk", body)
    assert asked.status_code == 202, asked.text
    assert asked.json()["matched"] == len(held)
    # Killed once the big part has committed a slice, before its last.
    split = Partitioning("", cluster.partitions)
    big = bulk_journal_id(part_id(asked.json()["id"], theirs[0], split))
    await fast_until(lambda: part_done(cluster, big) > 0, "a slice of the big part")
    assert await victim.process.stop(signal.SIGKILL) == -signal.SIGKILL
    assert 0 < part_done(cluster, big) < counts[theirs[0]], "killed too late: not mid-bulk"

    view = await finished(survivor, asked.json()["id"], timeout_s=90)
    total = len(held)
    assert (view["total"], view["done"], view["changed"], view["refused"]) == (
        total, total, total, 0,
    ), view["errors"][:3]  # fmt: skip
    await until(
        lambda: set(statuses(cluster, held).values()) == {"cancelled"}, "every job cancelled"
    )
    assert cancel_rows(cluster, held) == dict.fromkeys(held, 1)  # none acted on twice
    assert cluster.commits()  # and no commit at an old epoch (the ledger is checked)


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_a_bulk_under_way_leaves_with_its_partition_and_comes_back_with_it(cluster):
    cluster.config.write_text((chaos.WORKFLOW + HOLDING).replace("{p}", cluster.prefix))
    manager = await cluster.start_manager()
    await cluster.balanced([manager])
    # Most jobs in partition 3, the one a manager hands over first when another joins. A
    # retry of a job that left memory reads it back first: its part takes a few seconds.
    counts = {0: 5, 1: 5, 2: 5, 3: 6000}
    failed = [
        job_id
        for partition, count in counts.items()
        for job_id in ids_in_partition(partition, cluster.partitions, count)
    ]
    await trigger(cluster, "brief", failed)  # as AMQP triggers: 6,000 POSTs take a minute

    def all_failed() -> bool:  # every job there (a trigger is taken a moment later), failed
        return list(statuses(cluster, failed).values()) == ["failed"] * len(failed)

    await until(all_failed, "every job failed", 60)
    body = {"action": "retry", "filter": {"workflow": "brief"}}
    asked = await ask(manager, "POST", "/api/jobs/bulk", body)
    assert asked.status_code == 202, asked.text
    bulk_id = asked.json()["id"]
    big = bulk_journal_id(part_id(bulk_id, 3, Partitioning("", cluster.partitions)))
    await fast_until(lambda: part_done(cluster, big) > 0, "a slice of the big part")

    # A member that takes nothing joins: the manager hands partitions 2 and 3 over, and
    # with them the part under way, which stops where its journal left it.
    cluster.query(
        "INSERT INTO cluster_members VALUES ('~phantom', NULL, 0, 0, 1e12)"
    )  # sorted after every host:pid, so the manager keeps the lowest partitions
    free = "SELECT count(*) FROM partition_leases WHERE partition IN (2, 3) AND owner IS NULL"
    await until(lambda: cluster.query(free) == [(2,)], "partitions 2 and 3 handed over")
    stopped_at = part_done(cluster, big)
    assert 0 < stopped_at < counts[3], "handed over too late: not mid-bulk"
    running = await ask(manager, "GET", f"/api/bulk/{bulk_id}")
    assert running.json()["status"] == "running", running.text

    cluster.query("DELETE FROM cluster_members WHERE name = '~phantom'")
    view = await finished(manager, bulk_id, timeout_s=90)
    total = len(failed)
    assert (view["total"], view["done"], view["changed"], view["refused"]) == (
        total, total, total, 0,
    ), view["errors"][:3]  # fmt: skip
    retries = cluster.query(
        "SELECT job_id, count(*) FROM events WHERE kind = 'retry' AND job_id = ANY(%s)"
        " GROUP BY job_id",
        (failed,),
    )
    assert dict(retries) == dict.fromkeys(failed, 1)  # none twice, none left out
    assert manager.process.proc.returncode is None
    assert sum((await rejoins(manager)).values()) == 0, "the manager was fenced out"


async def fast_until(predicate: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    """Poll `predicate` tightly: a slice commits in a fraction of a second."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"not within {timeout_s}s: {what}"
        await asyncio.sleep(0.005)
