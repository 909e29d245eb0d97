"""The manager's payload stage (`PayloadRefs`): large values stored, rules' keys kept inline,
references a rule reads read back in, and a reference that cannot be read fails its message."""

from __future__ import annotations

import orjson
import pytest

from payload_refs import MemoryStore, as_ref
from payload_refs.errors import PayloadRefError
from workflow_manager.config import parse_workflows
from workflow_manager.engine import JobSubmitted, SignalReceived, StepReplied
from workflow_manager.payloads.stage import PayloadRefs

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"
WORKFLOWS = parse_workflows(
    """
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
        when: "ready"
"""
)
BIG = "x" * 4000


def _stage(store: MemoryStore | None, max_inline: int = 1 << 20) -> PayloadRefs:
    return PayloadRefs(store, 1024, max_inline, WORKFLOWS, (), lambda job_id: WORKFLOWS["w"])


def _reply(body: dict) -> StepReplied:
    return StepReplied(JOB, "a", orjson.dumps(body), 1.0)


async def test_a_small_reply_is_passed_on_as_it_came():
    event = _reply({"n": 1})
    assert await _stage(MemoryStore("main")).reply(event) is event


async def test_a_large_reply_has_its_large_values_stored_but_not_the_keys_rules_read():
    store = MemoryStore("main")
    event = await _stage(store).reply(_reply({"blob": BIG, "ready": BIG, "n": 1}))
    body = orjson.loads(event.body)
    ref = as_ref(body["blob"])
    assert ref is not None and ref.store == "main" and ref.key == f"{JOB}/{ref.sha256}"
    assert orjson.loads(await store.get(ref)) == BIG
    assert body["ready"] == BIG and body["n"] == 1  # `when: ready` reads it


async def test_a_reference_a_rule_reads_is_read_back_in_and_others_are_not():
    store = MemoryStore("main")
    ready = (await store.put(JOB, b"true")).to_json()
    other = (await store.put(JOB, orjson.dumps(BIG))).to_json()
    event = await _stage(store).reply(_reply({"ready": ready, "other": other}))
    assert orjson.loads(event.body) == {"ready": True, "other": other}


async def test_a_reference_a_rule_reads_that_cannot_be_read_fails_the_attempt():
    store = MemoryStore("main")
    missing = {"$ref": f"wm://main/{JOB}/{'0' * 64}", "sha256": "0" * 64, "size": 4}
    event = await _stage(store).reply(_reply({"ready": missing}))
    assert event.error == f"PayloadRefError: wm://main/{JOB}/{'0' * 64}: not found in memory"


async def test_without_a_store_a_reference_a_rule_reads_fails_and_others_pass():
    missing = {"$ref": f"wm://main/{JOB}/{'0' * 64}", "sha256": "0" * 64, "size": 4}
    passed = _reply({"data": missing, "n": 1})
    assert await _stage(None).reply(passed) is passed
    failed = await _stage(None).reply(_reply({"ready": missing}))
    assert failed.error is not None and "no payload store is configured here" in failed.error


async def test_a_rule_key_past_the_message_limit_is_refused_before_it_is_read():
    store = MemoryStore("main")
    ready = (await store.put(JOB, orjson.dumps(BIG))).to_json()
    event = await _stage(store, max_inline=2000).reply(_reply({"ready": ready}))
    assert event.error is not None and "pass --max-message-bytes (2,000)" in event.error


async def test_a_trigger_payload_and_a_signal_are_stored_the_same_way():
    store = MemoryStore("main")
    stage = _stage(store)
    submitted = await stage.submission(JobSubmitted(JOB, "w", {"blob": BIG, "id": 7}, 1.0))
    assert as_ref(submitted.payload["blob"]) is not None and submitted.payload["id"] == 7
    signal = await stage.signal(SignalReceived(JOB, "b", {"blob": BIG}, 1.0), WORKFLOWS["w"])
    assert as_ref(signal.payload["blob"]) is not None
    assert stage.counts.stored == 2


async def test_a_trigger_whose_rule_key_reference_is_missing_is_refused():
    missing = {"$ref": f"wm://main/{JOB}/{'0' * 64}", "sha256": "0" * 64, "size": 4}
    with pytest.raises(PayloadRefError, match="not found"):
        await _stage(MemoryStore("main")).submission(
            JobSubmitted(JOB, "w", {"ready": missing}, 1.0)
        )


async def test_a_job_pinned_to_an_older_definition_keeps_the_keys_its_own_rules_read():
    older = parse_workflows(
        "workflows:\n  - name: w\n    steps:\n      - name: a\n"
        "      - name: b\n        depends: [a]\n        when: ready\n"
    )["w"]
    newer = parse_workflows(
        "workflows:\n  - name: w\n    steps:\n      - name: a\n"
        "      - name: b\n        depends: [a]\n        when: go\n"
    )["w"]
    stage = PayloadRefs(MemoryStore("main"), 1024, 1 << 20, {"w": newer}, (), lambda _: older)
    event = await stage.reply(_reply({"ready": BIG, "go": BIG}))
    body = orjson.loads(event.body)
    assert body["ready"] == BIG  # the job's own `when` reads it
    assert as_ref(body["go"]) is not None
