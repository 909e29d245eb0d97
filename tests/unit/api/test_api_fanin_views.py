"""A join step's progress (needed, succeeded, failed, left) and a reduce step's (batches and
children reduced) in `GET /api/job/{id}` (what `watch` draws) and `GET /api/job/{id}/steps`
(the job page); a reference in a payload or output stays a reference."""

from __future__ import annotations

import pytest

from .conftest import Service

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
REF = {
    "$ref": f"wm://main/{JOB}/{'9f86d081' * 8}",
    "sha256": "9f86d081" * 8,
    "size": 104_857_600,
}

YAML = """
workflows:
  - name: joined
    steps:
      - name: ask
        task: per_item
        join: {min_success: 2, then: cancel}
    tasks:
      - name: per_item
        itemListKey: items
        steps:
          - name: work
  - name: summed
    steps:
      - name: fan
        task: per_item
        reduce: {step: total, batch: 2, initial: {sum: 0}}
    tasks:
      - name: per_item
        itemListKey: items
        steps:
          - name: work
"""


@pytest.fixture
def workflows_yaml() -> str:
    return YAML


async def _get(client, path: str) -> dict:
    response = await client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


async def _start(client, workflow: str, payload: dict) -> list[str]:
    response = await client.post(f"/api/workflow/{workflow}?id={JOB}", json=payload)
    assert response.status_code == 200, response.text
    detail = await _get(client, f"/api/job/{JOB}")
    (fan,) = detail["running"]
    return fan["tasks"]


def _step(page: dict, name: str) -> dict:
    return next(step for step in page["steps"] if step["name"] == name)


async def test_a_join_step_shows_needed_and_done_until_met(client, service: Service):
    children = await _start(client, "joined", {"items": [1, 2, 3, 4], "big": REF})
    await service.reply(children[0], "work", {"item": REF})
    await service.reply(children[1], "work", error="no answer")
    detail = await _get(client, f"/api/job/{JOB}")
    (ask,) = detail["running"]
    assert ask["join"] == {
        "policy": "min_success 2", "needed": 2, "succeeded": 1, "failed": 1, "left": 2,
        "then": "cancel",
    }  # fmt: skip
    page = await _get(client, f"/api/job/{JOB}/steps")
    assert _step(page, "ask")["join"] == ask["join"]
    assert page["payload"]["big"] == REF  # shown as the reference, never resolved

    await service.reply(children[3], "work", {"item": 4})
    page = await _get(client, f"/api/job/{JOB}/steps")
    ask_view = _step(page, "ask")
    assert ask_view["status"] == "completed"
    assert ask_view["join"] == {
        "policy": "min_success 2", "needed": 2, "succeeded": 2, "failed": 1, "left": 1,
        "then": "cancel", "met": True,
    }  # fmt: skip
    assert ask_view["children"]["cancelled"] == 1
    # The gathered output keeps the child's reference as it is.
    assert ask_view["output"]["items"] == [REF, None, None, 4]


async def test_a_reduce_step_shows_batches_and_children_reduced(client, service: Service):
    children = await _start(client, "summed", {"items": [1, 2, 3]})
    for child in children[:2]:
        await service.reply(child, "work", {"v": 1})
    detail = await _get(client, f"/api/job/{JOB}")
    fan = next(step for step in detail["running"] if step["name"] == "fan")
    assert fan["reduce"] == {
        "step": "total", "batch": 2, "batches": 0, "reduced": 0, "pending": 0, "in_flight": 2,
    }  # fmt: skip
    await service.reply(JOB, "total", {"sum": 2})
    page = await _get(client, f"/api/job/{JOB}/steps")
    assert _step(page, "fan")["reduce"] == {
        "step": "total", "batch": 2, "batches": 1, "reduced": 2, "pending": 0, "in_flight": 0,
    }  # fmt: skip
    await service.reply(children[2], "work", {"v": 1})
    await service.reply(JOB, "total", {"sum": 3})
    page = await _get(client, f"/api/job/{JOB}/steps")
    assert page["status"] == "completed"
    fan_view = _step(page, "fan")
    assert fan_view["output"] == {"sum": 3}
    # Ended: counted from the reducer's attempts in the journal (the last batch held one).
    assert fan_view["reduce"] == {"step": "total", "batch": 2, "batches": 2, "reduced": 3}
