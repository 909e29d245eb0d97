"""Job metadata: a trigger's `x-meta` goes with every request of the job and its children; a
reply's `x-meta-patch` is deep-merged in, and requests after it carry the merged value."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.engine.helpers import (
    JOB,
    child_id,
    cid,
    dispatches,
    encode,
    make_state,
    of_type,
)
from workflow_manager.config.expressions import compile_expression
from workflow_manager.engine import (
    JobDuplicate,
    JobSubmitted,
    StartTimer,
    StepFinished,
    StepReplied,
    TimerFired,
    apply,
)
from workflow_manager.engine.metadata import MAX_META_BYTES, key_data, merge_patch
from workflow_manager.engine.snapshot import restore, snapshot

CHAIN = """
workflows:
  - name: w
    steps:
      - name: first
      - {name: fan, task: t, depends: [first]}
      - {name: last, depends: [fan]}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
"""
META = {"tenant": "acme", "plan": {"tier": "pro", "seats": 3}}


def _submit(state, meta=META):
    _, commands = apply(state, JobSubmitted(JOB, "w", {}, 1.0, meta=meta))
    return commands


def _reply(state, correlation_id, body, patch=None):
    job_id, _, step = correlation_id.partition(":")
    _, commands = apply(state, StepReplied(job_id, step, encode(body), 2.0, meta_patch=patch))
    return commands


def test_the_meta_goes_on_every_request_and_a_patch_on_later_ones_children_too():
    state = make_state(CHAIN)
    (first,) = dispatches(_submit(state))
    assert first.meta == META
    patch = '{"plan": {"seats": 5}, "region": "eu"}'
    commands = _reply(state, cid(JOB, "first"), {"items": [1, 2]}, patch)
    merged = {"tenant": "acme", "plan": {"tier": "pro", "seats": 5}, "region": "eu"}
    assert [d.meta for d in dispatches(commands)] == [merged, merged]
    child = child_id(JOB, "fan", 0)
    _reply(state, cid(child, "leaf"), {"item": 1}, '{"seen": ["child 0"]}')
    commands = _reply(state, cid(child_id(JOB, "fan", 1), "leaf"), {"item": 2})
    (last,) = dispatches(commands)
    assert last.meta == {**merged, "seen": ["child 0"]}
    assert state.jobs[JOB].meta == last.meta


def test_a_job_without_meta_sends_none():
    state = make_state(CHAIN)
    (first,) = dispatches(_submit(state, None))
    assert first.meta is None
    commands = _reply(state, cid(JOB, "first"), {"items": []}, '{"a": 1}')
    (last,) = dispatches(commands)
    assert last.meta == {"a": 1}


@pytest.mark.parametrize(
    ("patch", "found"), [("[1]", "got a list"), ("{", "not valid JSON"), ('"x"', "got a string")]
)
def test_a_patch_that_is_no_object_fails_the_attempt(patch: str, found: str):
    state = make_state(CHAIN)
    _submit(state)
    commands = _reply(state, cid(JOB, "first"), {"items": []}, patch)
    (failed,) = of_type(commands, StepFinished)
    assert (failed.outcome, failed.reason) == ("failed", "invalid_reply")
    assert "x-meta-patch" in (failed.message or "") and found in (failed.message or "")
    assert state.jobs[JOB].meta == META


def test_a_patch_that_would_grow_the_meta_past_its_limit_fails_the_attempt():
    state = make_state(CHAIN)
    _submit(state)
    patch = '{"blob": "%s"}' % ("x" * MAX_META_BYTES)
    commands = _reply(state, cid(JOB, "first"), {"items": []}, patch)
    (failed,) = of_type(commands, StepFinished)
    assert (failed.outcome, failed.reason) == ("failed", "invalid_reply")
    assert f"the limit is {MAX_META_BYTES:,}" in (failed.message or "")
    assert state.jobs[JOB].meta == META  # unchanged


def test_the_meta_is_in_the_snapshot():
    state = make_state(CHAIN)
    _submit(state)
    job = state.jobs[JOB]
    assert restore(snapshot(job), job.workflow).meta == META


@pytest.mark.parametrize(
    ("meta", "patch", "merged"),
    [
        ({"a": 1}, {"a": 2}, {"a": 2}),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}, {"a": {"b": 3, "c": 2}}),
        ({"a": {"b": 1}}, {"a": 5}, {"a": 5}),
        ({"a": 5}, {"a": {"b": 1}}, {"a": {"b": 1}}),
        ({"a": [1]}, {"a": [2]}, {"a": [2]}),  # lists are values, not merged
        ({}, {"x": None}, {"x": None}),
    ],
)
def test_merge_patch_is_deep_and_later_wins(meta, patch, merged):
    assert merge_patch(meta, patch) == merged
    assert merge_patch(meta, {}) == meta


def test_key_data_puts_the_metadata_under_meta_for_jmespath_keys():
    key = compile_expression("meta.tenant")
    assert key.search(key_data({"x": 1}, {"tenant": "acme"})) == "acme"
    assert key.search(key_data({"x": 1}, None)) is None
    payload = {"meta": {"tenant": "old"}}  # without job metadata, a payload's own `meta` counts
    assert key_data(payload, None) is payload


TENANTS = """
workflows:
  - name: w
    concurrency: {limit: 1, key: meta.tenant}
    unique: {key: "[meta.tenant, order]"}
    steps:
      - name: work
"""


def test_concurrency_and_unique_keys_read_the_job_metadata():
    state = make_state(TENANTS)

    def submit(n: int, tenant: str, order: int) -> list:
        job_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"job-{n}"))
        event = JobSubmitted(job_id, "w", {"order": order}, float(n), meta={"tenant": tenant})
        commands = apply(state, event)[1]
        for timer in of_type(commands, StartTimer):  # admitted work starts at once
            commands += apply(state, TimerFired(timer.key, float(n)))[1]
        return commands

    assert [d.meta for d in dispatches(submit(1, "acme", 1))] == [{"tenant": "acme"}]
    assert dispatches(submit(2, "acme", 2)) == []  # queued: acme's one slot is taken
    assert len(dispatches(submit(3, "globex", 1))) == 1  # another tenant, another slot
    (duplicate,) = of_type(submit(4, "acme", 1), JobDuplicate)
    assert duplicate.key == '["acme",1]'
