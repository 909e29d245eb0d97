"""Fair shares on a real manager: another tenant's first request goes at the next free slot,
however many of one tenant's children wait for it."""

from __future__ import annotations

import json

import pytest

from ..harness import take_one

WORKFLOWS = """
workflows:
  - name: shared
    fairness: {key: tenant}
    steps:
      - {name: fan, task: rows}
    tasks:
      - name: rows
        itemListKey: items
        steps:
          - {name: upsert, queue: "{p}.upsert", concurrency: 3}
"""

CHILDREN = 100_000


@pytest.mark.parametrize("fair", [True, False])
async def test_tenant_b_goes_next_while_tenant_a_has_100000_children_waiting(system, fair):
    text = WORKFLOWS if fair else WORKFLOWS.replace("    fairness: {key: tenant}\n", "")
    sys = await system(text)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.upsert", durable=True)
    a = await sys.http.post(
        "/api/workflow/shared", json={"tenant": "a", "items": list(range(CHILDREN))}
    )
    assert a.status_code == 200, a.text
    held = [await take_one(queue) for _ in range(3)]  # the step's three slots: a's children
    assert {json.loads(request.body)["tenant"] for request in held} == {"a"}
    b = await sys.http.post("/api/workflow/shared", json={"tenant": "b", "items": [0]})
    assert b.status_code == 200, b.text  # committed: b's child waits for a slot now
    shown = (await sys.http.get(f"/api/job/{b.json()['id']}/steps")).json()
    assert shown.get("fair_share") == ({"key": '"b"', "weight": 1.0} if fair else None)
    await sys.answer(held[0], b"{}")
    after = json.loads((await take_one(queue)).body)
    # Fair: b's turn at the first free slot. Oldest first, it would wait for a's 99,997 others.
    assert after["tenant"] == ("b" if fair else "a")
