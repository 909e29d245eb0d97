"""A job held back by a limit tells job.queued with the limit it waits under, as the API."""

from __future__ import annotations

import yaml

from tests.unit.engine.helpers import make_state
from workflow_manager.config.models import WorkflowFile
from workflow_manager.engine import EngineState, JobSubmitted, apply
from workflow_manager.events.model import run_events

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"
THIRD = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
YAML = """
workflows:
  - name: w
    concurrency: {limit: 1, key: tenant}
    steps: [{name: call}]
"""
LIMITS = """
limits:
  - {name: per-region, limit: 1, key: meta.region}
workflows:
  - name: w
    steps: [{name: call}]
"""


def _queued(commands: list) -> list[dict]:
    return [e.to_json() for e in run_events(commands, 0.0) if e.type == "job.queued"]


def test_a_queued_job_event_names_the_full_limit_and_its_use():
    state = make_state(YAML)
    first = apply(state, JobSubmitted(FIRST, "w", {"tenant": "a"}, 5.0))[1]
    # A free slot: queued, and reserved at once (it waits under no limit).
    assert _queued(first) == [
        {"type": "job.queued", "job": FIRST, "root": FIRST, "workflow": "w",
         "status": "queued", "at": 5.0},
    ]  # fmt: skip
    second = apply(state, JobSubmitted(SECOND, "w", {"tenant": "a"}, 6.0))[1]
    assert _queued(second) == [
        {"type": "job.queued", "job": SECOND, "root": SECOND, "workflow": "w",
         "status": "queued",
         "waiting_for": {"kind": "concurrency", "limit": "concurrency", "key": '"a"',
                         "running": 1, "of": 1},
         "at": 6.0},
    ]  # fmt: skip
    # Another key's slot is free: no limit named.
    third = apply(state, JobSubmitted(THIRD, "w", {"tenant": "b"}, 7.0))[1]
    assert "waiting_for" not in _queued(third)[0]


def test_a_job_queued_under_a_nested_limit_names_it():
    doc = WorkflowFile.model_validate(yaml.safe_load(LIMITS))
    state = EngineState.from_workflows({wf.name: wf for wf in doc.workflows}, limits=doc.limits)
    apply(state, JobSubmitted(FIRST, "w", {}, 5.0, meta={"region": "eu"}))
    second = apply(state, JobSubmitted(SECOND, "w", {}, 6.0, meta={"region": "eu"}))[1]
    (event,) = _queued(second)
    assert event["waiting_for"] == {
        "kind": "limit", "limit": "per-region", "key": '"eu"', "running": 1, "of": 1
    }  # fmt: skip
