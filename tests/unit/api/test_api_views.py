"""The pure views and input readers, without HTTP: tables over real engine state."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi import HTTPException

from workflow_manager.api import views
from workflow_manager.api.errors import validation_message
from workflow_manager.api.inputs import parse_job_id, parse_payload, resolve_job_id
from workflow_manager.config.models import WorkflowFile
from workflow_manager.engine import EngineState, JobSubmitted, StepReplied, apply

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
OTHER = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"

YAML = """
workflows:
  - name: w
    steps:
      - name: one
      - name: two
        depends: [one]
  - name: h
    vhosts: [eu, us]
    steps:
      - name: only
"""


def make_state() -> EngineState:
    doc = WorkflowFile.model_validate(yaml.safe_load(YAML))
    return EngineState.from_workflows({wf.name: wf for wf in doc.workflows})


def submit(state: EngineState, job_id: str = JOB, workflow: str = "w", at: float = 0.0) -> None:
    apply(state, JobSubmitted(job_id, workflow, {"k": 1}, at))


def reply(state: EngineState, step: str, at: float, body: dict | None = None, **kw) -> None:
    raw = json.dumps(body or {}).encode()
    apply(state, StepReplied(JOB, step, raw, at, **kw))


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1_700_000_000.0, "2023-11-14T22:13:20.000Z"),
        (1_700_000_000.1234, "2023-11-14T22:13:20.123Z"),
    ],
)
def test_iso_utc(at, expected):
    assert views.iso_utc(at) == expected


def test_summaries_one_entry_per_vhost_each_with_the_workflow_total():
    state = make_state()
    submit(state, workflow="h")
    workflows = {name: state.workflow(name) for name in ("w", "h")}
    assert views.workflow_summaries(workflows, state.jobs.values()) == [
        {"vhost": "", "name": "w", "job_count": 0},
        {"vhost": "eu", "name": "h", "job_count": 1},
        {"vhost": "us", "name": "h", "job_count": 1},
    ]


def test_job_detail_at_time_zero_keeps_zero_times():
    # 0.0 is a real time, not "unset": elapsed must not fall back to now.
    state = make_state()
    submit(state, at=0.0)
    reply(state, "one", at=0.0)
    detail = views.job_detail(state.jobs[JOB], now=50.0)
    assert detail["completed"][1]["elapsed"] == 0.0
    assert detail["running"][0]["elapsed"] == 50.0


def test_waiting_steps_are_not_listed():
    state = make_state()
    submit(state)
    detail = views.job_detail(state.jobs[JOB], now=1.0)
    assert [s["name"] for s in detail["running"]] == ["one"]
    assert [s["name"] for s in detail["completed"]] == ["__start__"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"{}", {}),
        (b' {"a": [1, 2], "b": null} ', {"a": [1, 2], "b": None}),
        ('{"word": "café"}'.encode(), {"word": "café"}),
    ],
)
def test_parse_payload_accepts_objects(raw, expected):
    assert parse_payload(raw) == expected


@pytest.mark.parametrize(
    ("query", "payload", "expected"),
    [
        (None, {}, None),
        (None, {"id": 7}, None),
        (JOB, {}, JOB),
        (None, {"id": JOB.upper()}, JOB),
        (JOB.upper(), {"id": JOB}, JOB),
    ],
)
def test_resolve_job_id(query, payload, expected):
    assert resolve_job_id(query, payload) == expected


def test_resolve_job_id_refuses_two_different_ids():
    with pytest.raises(HTTPException) as caught:
        resolve_job_id(JOB, {"id": OTHER})
    assert caught.value.status_code == 400
    assert JOB in caught.value.detail and OTHER in caught.value.detail


def test_canonical_uuid_names_the_source_and_value():
    with pytest.raises(HTTPException) as caught:
        parse_job_id("x1", "job id")
    assert caught.value.detail.startswith("job id 'x1' is not a UUID (e.g. ")


def test_validation_message_joins_every_error():
    errors = [
        {"loc": ("query", "interval"), "msg": "Input should be greater than 0", "input": "-1"},
        {"loc": ("path", "name"), "msg": "Field required"},
        {"loc": ("body", "x"), "msg": "bad", "input": {"secret": 1}},
    ]
    assert validation_message(errors) == (
        "query parameter 'interval': Input should be greater than 0 (got '-1'); "
        "path parameter 'name': Field required; body.x: bad"
    )
