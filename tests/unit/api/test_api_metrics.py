"""GET /metrics after a known run: the real orchestrator on the in-memory transport and SQLite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from workflow_manager.api import create_app
from workflow_manager.journal import open_journal
from workflow_manager.metrics import Metrics
from workflow_manager.orchestrator import ManagerSettings
from workflow_manager.transport.memory import MemoryTransport

from .conftest import FakeClock, Service, load_workflows

WORKFLOWS = """
workflows:
  - name: shelf
    steps:
      - {name: shelve, retries: 1, retry_backoff: {initial: 0}}
      - {name: each, task: per_book, depends: [shelve]}
      - {name: total, depends: [each]}
    tasks:
      - name: per_book
        itemListKey: books
        steps:
          - name: fetch
  - name: doomed
    steps:
      - name: boom
"""
SHELF = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
DOOMED = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Rig:
    service: Service
    http: httpx.AsyncClient
    clock: FakeClock

    async def scrape(self) -> Samples:
        """GET /metrics, parsed: value by (sample name, labels)."""
        response = await self.http.get("/metrics")
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/plain; version=")
        samples: Samples = {}
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
        return samples


def get(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def named(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: value for (sample, labels), value in samples.items() if sample == name}


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    clock = FakeClock()
    workflows = load_workflows(WORKFLOWS)
    metrics = Metrics(workflows)
    journal = await open_journal(tmp_path / "metered.db")
    journal.watch_commits(metrics.journal_committed)
    service = Service(
        workflows, ManagerSettings(queue="wm"), journal, MemoryTransport(), clock=clock,
        observers=[metrics],
    )  # fmt: skip
    metrics.watch(service)
    await service.start()
    app = create_app(service, clock=clock, metrics=metrics)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://manager"
    ) as http:
        yield Rig(service, http, clock)
    await service.stop()


async def run_known_jobs(rig: Rig) -> None:
    """shelf: shelve fails once and is retried, three children, then total; doomed fails."""
    service, clock = rig.service, rig.clock
    response = await rig.http.post(f"/api/workflow/shelf?id={SHELF}", json={})
    assert response.status_code == 200, response.text
    clock.advance(1.0)
    await service.reply(SHELF, "shelve", error="shelf wobbles")
    clock.advance(2.0)
    await service.reply(SHELF, "shelve", {"books": ["a", "b", "c"]})
    children = [m.correlation_id.split(":")[0] for m in service.transport.sent_to("fetch")]
    assert len(children) == 3
    for child in children:
        clock.advance(0.5)
        await service.reply(child, "fetch", {"book": "x"})
    clock.advance(0.25)
    await service.reply(SHELF, "total", {"n": 3})
    assert (await rig.http.get(f"/api/job/{SHELF}")).json()["status"] == "completed"
    response = await rig.http.post(f"/api/workflow/doomed?id={DOOMED}", json={})
    assert response.status_code == 200, response.text
    await service.reply(DOOMED, "boom", error="no")
    assert (await rig.http.get(f"/api/job/{DOOMED}")).json()["status"] == "failed"


async def test_a_known_run_gives_exact_job_and_step_counts(rig):
    await run_known_jobs(rig)
    samples = await rig.scrape()

    assert named(samples, "workflow_manager_jobs_started_total") == {
        frozenset({("workflow", "shelf")}): 1.0,
        frozenset({("workflow", "doomed")}): 1.0,
    }
    assert named(samples, "workflow_manager_jobs_finished_total") == {
        frozenset({("workflow", "shelf"), ("status", "completed")}): 1.0,
        frozenset({("workflow", "doomed"), ("status", "failed")}): 1.0,
    }
    assert get(samples, "workflow_manager_jobs_running", workflow="shelf") == 0
    assert get(samples, "workflow_manager_jobs_running", workflow="doomed") == 0
    assert get(samples, "workflow_manager_job_duration_seconds_count", workflow="shelf") == 1
    assert get(samples, "workflow_manager_job_duration_seconds_sum", workflow="shelf") == 4.75

    requests = {
        dict(labels)["step"]: value
        for labels, value in named(samples, "workflow_manager_step_requests_total").items()
    }
    assert requests == {"shelve": 2, "fetch": 3, "total": 1, "boom": 1}
    assert named(samples, "workflow_manager_step_failures_total") == {
        frozenset({("workflow", "shelf"), ("step", "shelve"), ("reason", "error")}): 1.0,
        frozenset({("workflow", "doomed"), ("step", "boom"), ("reason", "error")}): 1.0,
    }
    timed = {
        dict(labels)["step"]: value
        for labels, value in named(samples, "workflow_manager_step_duration_seconds_count").items()
    }
    assert timed == {"shelve": 2, "fetch": 3, "each": 1, "total": 1, "boom": 1}
    assert get(
        samples, "workflow_manager_step_duration_seconds_sum", workflow="shelf", step="shelve"
    ) == 3.0  # fmt: skip
    assert get(
        samples, "workflow_manager_step_duration_seconds_sum", workflow="shelf", step="each"
    ) == 1.5  # fmt: skip
    assert get(samples, "workflow_manager_broker_connected") == 1
    assert get(samples, "workflow_manager_outbox_pending") == 0
    commits = get(samples, "workflow_manager_journal_commit_seconds_count")
    assert commits is not None and commits >= 8  # at least one per event above


async def test_dead_letters_are_counted_by_a_fixed_reason(rig):
    transport = rig.service.transport
    handled = [
        transport.deliver("wm", b"{}", correlation_id="not-a-job")[1],
        transport.deliver("wm.jobs", b"{}")[1],  # no workflow header
        transport.deliver("wm.jobs", b"{}", headers={"workflow": "nope"})[1],
        transport.deliver("wm.jobs", b"not json", headers={"workflow": "doomed"})[1],
        transport.deliver("wm.jobs", b"[1]", headers={"workflow": "doomed"})[1],
        transport.deliver("wm", b"{}", correlation_id="still-not-a-job")[1],
    ]
    for task in handled:
        await task
    assert len(transport.sent_to("wm.dead")) == 6
    dead = named(await rig.scrape(), "workflow_manager_dead_letters_total")
    assert {dict(labels)["reason"]: value for labels, value in dead.items()} == {
        "bad_reply": 2,
        "invalid_trigger": 2,
        "unknown_workflow": 1,
        "invalid_payload": 1,
    }


async def test_broker_and_outbox_gauges_are_read_when_scraped(rig):
    transport = rig.service.transport
    transport.confirming.clear()  # the broker holds its confirms
    try:
        # An id of the manager's own: its request goes out once the job is committed, counted.
        _, handled = transport.deliver("wm.jobs", b"{}", headers={"workflow": "doomed"})
        await asyncio.wait_for(transport.holding.wait(), 5)
        samples = await rig.scrape()
        assert get(samples, "workflow_manager_outbox_pending") == 1
        assert get(samples, "workflow_manager_jobs_running", workflow="doomed") == 1
        transport.connected = False
        assert get(await rig.scrape(), "workflow_manager_broker_connected") == 0
        transport.connected = True
        transport.confirming.set()
        await handled
        assert get(await rig.scrape(), "workflow_manager_outbox_pending") == 0
    finally:
        transport.connected = True  # else stopping the manager waits for the held publish
        transport.confirming.set()


async def test_only_an_app_given_metrics_serves_them(rig, client):
    assert (await rig.http.get("/metrics")).status_code == 200
    response = await client.get("/metrics")  # the shared fixture's app: made with no metrics
    assert response.status_code == 404 and "error" in response.json()
