"""Nested limits on a real manager: jobs of two tenants and two workflows under a global, a
per-tenant and a per-workflow limit; the worker never holds more requests than any allows, and
a queued job's page names the limit it waits under."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter

WORKFLOWS = """
limits:  # narrowest first: a queued job names the first full one
  - {name: per-workflow, limit: 1, workflows: [alpha]}
  - {name: per-tenant, limit: 2, key: tenant}
  - {name: global, limit: 3}
workflows:
  - name: alpha
    steps: [{name: work, queue: "{p}.work"}]
  - name: beta
    steps: [{name: work, queue: "{p}.work"}]
"""
# (workflow, tenant) of each job, in submission order.
JOBS = [("alpha", "acme"), ("beta", "acme"), ("alpha", "zeta"), ("beta", "zeta")] * 3
LIMITS = {"global": 3, "per-tenant": 2, "per-workflow": 1}


def _over(out: list[tuple[str, str]]) -> list[str]:
    """The limits the requests `out` (each job's workflow and tenant) would exceed."""
    counts = {
        "global": len(out),
        "per-tenant": max(Counter(tenant for _, tenant in out).values(), default=0),
        "per-workflow": sum(1 for workflow, _ in out if workflow == "alpha"),
    }
    return [name for name, n in counts.items() if n > LIMITS[name]]


def _most_out_over_time(db, of: dict[str, tuple[str, str]]) -> list[str]:
    """Every limit the journal shows exceeded at some moment (dispatched, then replied)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT kind, job_id FROM events WHERE step = 'work'"
            " AND kind IN ('dispatched', 'replied') ORDER BY seq"
        ).fetchall()
    out: dict[str, tuple[str, str]] = {}
    exceeded: set[str] = set()
    for kind, job_id in rows:
        if kind == "dispatched":
            out[job_id] = of[job_id]
        else:
            out.pop(job_id, None)
        exceeded.update(_over(list(out.values())))
    return sorted(exceeded)


async def test_nested_limits_hold_and_a_queued_job_names_its_limit(system):
    sys = await system(WORKFLOWS)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.work", durable=True)
    of: dict[str, tuple[str, str]] = {}
    for workflow, tenant in JOBS:
        response = await sys.http.post(f"/api/workflow/{workflow}", json={"tenant": tenant})
        assert response.status_code == 200, response.text
        of[response.json()["id"]] = (workflow, tenant)
    ids = list(of)

    # alpha/acme, beta/acme and beta/zeta run; alpha/zeta waits for alpha's one slot, the
    # next beta/acme for acme's two, the next beta/zeta for the global three.
    waits = [(await sys.http.get(f"/api/job/{ids[i]}/steps")).json() for i in (2, 5, 7)]
    assert [page["status"] for page in waits] == ["queued"] * 3
    assert [page["waiting_for"] for page in waits] == [
        {"kind": "limit", "limit": "per-workflow", "running": 1, "of": 1},
        {"kind": "limit", "limit": "per-tenant", "key": '"acme"', "running": 2, "of": 2},
        {"kind": "limit", "limit": "global", "running": 3, "of": 3},
    ]

    held: list = []
    answered = 0
    async with asyncio.timeout(60):
        while answered < len(JOBS):
            message = await queue.get(no_ack=True, fail=False)
            if message is not None:
                held.append(message)
                out = [of[m.correlation_id.split(":")[0]] for m in held]
                assert _over(out) == [], out
            elif held:
                await sys.answer(held.pop(0), b"{}")  # nothing new came: let one finish
                answered += 1
            else:
                await asyncio.sleep(0.02)  # a start is on its way: poll with the deadline
        while len(await _completed(sys)) < len(JOBS):
            await asyncio.sleep(0.05)
    assert _most_out_over_time(sys.db, of) == []


async def _completed(sys) -> list[str]:
    alpha = (await sys.http.get("/api/workflow/alpha")).json()["completed"]
    beta = (await sys.http.get("/api/workflow/beta")).json()["completed"]
    return [*alpha, *beta]
