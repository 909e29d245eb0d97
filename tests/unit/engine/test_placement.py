"""Where a new top-level job is placed: by its concurrency scope, its unique key, or its id."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.engine.helpers import JOB, OTHER_JOB, workflows
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.engine import EngineState, JobSubmitted, apply
from workflow_manager.engine.placement import placement_key

FLOW = """
workflows:
  - name: per-account
    concurrency: {limit: 1, key: account}
    unique: {key: order}
    steps: [{name: s}]
  - name: one-at-a-time
    concurrency: {limit: 2}
    steps: [{name: s}]
  - name: by-tenant
    concurrency: {limit: 1, key: meta.tenant}
    steps: [{name: s}]
  - name: unique-only
    unique: {key: "abs(n)"}
    steps: [{name: s}]
  - name: debounced
    debounce: {key: order, period: 2}
    steps: [{name: s}]
  - name: unique-and-debounced
    unique: {key: order}
    debounce: {key: order, period: 2, mode: trailing}
    steps: [{name: s}]
  - name: plain
    steps: [{name: s}]
"""
DEFS = workflows(FLOW)


@pytest.mark.parametrize(
    ("workflow", "payload", "meta", "key"),
    [
        # A concurrency limit wins over a unique key: its scope is the engine's own.
        ("per-account", {"account": "a", "order": 1}, None, 'workflow:per-account:"a"'),
        ("per-account", {"order": 1}, None, "workflow:per-account:null"),
        ("one-at-a-time", {"account": "a"}, None, "workflow:one-at-a-time:null"),
        ("by-tenant", {}, {"tenant": "t1"}, 'workflow:by-tenant:"t1"'),
        ("unique-only", {"n": -3}, None, "unique:unique-only:3"),
        # A debounce key: every trigger of one window meets on one manager.
        ("debounced", {"order": 7, "n": 1}, None, "debounce:debounced:7"),
        ("debounced", {"n": 1}, None, "debounce:debounced:null"),
        ("unique-and-debounced", {"order": 7}, None, "unique:unique-and-debounced:7"),
        # No key to place by, or none that can be read: by the job's id.
        ("unique-only", {"n": "x"}, None, None),
        ("plain", {"account": "a"}, None, None),
        ("per-account", ["not", "an", "object"], None, None),
        ("nope", {"account": "a"}, None, None),
    ],
)
def test_a_job_is_placed_by_its_workflows_key(workflow, payload, meta, key) -> None:
    assert placement_key(DEFS.get(workflow), payload, meta) == key


def test_jobs_of_one_key_share_a_partition_whatever_their_ids() -> None:
    split = Partitioning("wm", 6)
    key = placement_key(DEFS["per-account"], {"account": "acme"}, None)
    assert split.place(key, JOB) == split.place(key, OTHER_JOB)
    assert split.place(None, JOB) == split.of(JOB)  # no key: the id's partition
    assert split.of(JOB, placed=4) == 4  # a carried partition wins over the id's


def test_the_placement_key_is_the_scope_the_engine_limits() -> None:
    # Placement and the engine's limit must never disagree about which jobs share a key.
    state = EngineState.from_workflows(DEFS)
    payload = {"account": "acme", "order": 7}
    apply(state, JobSubmitted(JOB, "per-account", payload, 1.0, partition=2))
    job = state.jobs[JOB]
    assert job.scopes == (placement_key(DEFS["per-account"], payload, None),)
    assert job.partition == 2


def test_triggers_of_one_debounce_key_share_a_partition_whatever_the_rest_of_the_payload() -> None:
    split = Partitioning("wm", 16)
    keys = {placement_key(DEFS["debounced"], {"order": 7, "n": n}, None) for n in range(50)}
    assert len(keys) == 1
    (key,) = keys
    assert len({split.place(key, str(uuid.UUID(int=n, version=4))) for n in range(50)}) == 1
