"""The manager's pure pipeline for a few fuzzed messages: intake, engine, recorder, journal codec.

What `Pipeline.process` does for one delivery, without the broker and the database: the
intake reads it (an `Undeliverable` is a fine answer), `apply` changes the engine's state,
`record` makes the batch and the messages, and the journal codec encodes every row. Any
exception on that way is a crasher: once the engine accepted a message, the manager must be
able to journal what it did. The encoded rows must also be storable by both journals: every
text UTF-8 (SQLite binds text as UTF-8) and free of NUL (PostgreSQL's text refuses it).

Each input starts from a fresh state serving `WORKFLOWS` and applies up to six messages, so
the fuzzer can reach replies to running steps, fan-out children and waiting steps: their
correlation ids can be picked from the ids the state holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import yaml

from tests.fuzz.wire import Reader, read_headers
from workflow_manager import intake
from workflow_manager.config.models import Workflow, WorkflowFile
from workflow_manager.engine import (
    CancelRequested,
    EngineState,
    Event,
    JobArchived,
    JobFinished,
    JobSubmitted,
    RetryRequested,
    TimerFired,
    apply,
    jsontext,
)
from workflow_manager.journal.codec import encode_event, encode_job, encode_sent
from workflow_manager.limits import DEFAULT_JSON_DEPTH, MAX_MESSAGE_BYTES
from workflow_manager.recorder import record
from workflow_manager.transport.message import Delivery

__all__ = ["WORKFLOWS", "JOB_IDS", "read_delivery", "read_limits", "run_pipeline"]

# A plain step with a condition, a task fan-out with schemas, a waiting step with a timeout,
# retries and a fallback, metadata in keys, uniqueness and concurrency: the engine's paths a
# message's content decides.
WORKFLOWS_YAML = """
workflows:
  - name: plain
    steps:
      - {name: a, retries: 1, timeout: 5}
      - {name: b, depends: [a], when: "length(items || `[]`) > `1`"}
  - name: fan
    unique: {key: "[meta.tenant, order]"}
    concurrency: {limit: 2, key: meta.tenant}
    payload_schema: {type: object, properties: {order: {type: [string, integer]}}}
    steps:
      - {name: split, retries: 2, retry_backoff: {initial: 1}, fallback: {name: split-by-hand}}
      - {name: each, task: t, depends: [split]}
      - {name: approve, wait: true, depends: [each], timeout: 30}
      - {name: done, depends: [approve], output_schema: {type: object}}
    on_error:
      - {name: tidy}
    tasks:
      - name: t
        itemListKey: items
        max_failed_items: 1
        payload_schema: {properties: {item: {type: [integer, string, object]}}}
        steps:
          - {name: work, retries: 1}
          - {name: check, depends: [work], wait: true}
"""
WORKFLOWS: dict[str, Workflow] = {
    wf.name: wf for wf in WorkflowFile.model_validate(yaml.safe_load(WORKFLOWS_YAML)).workflows
}
# Sender-chosen job ids a trigger may carry (any other correlation id is fuzzed text).
JOB_IDS = (
    "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f",
    "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d",
)
_NEW_ID = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"
_QUEUE = "wm"
_KINDS = ("trigger", "reply", "signal", "timer", "cancel", "retry")
_MAX_MESSAGES = 6


def _known_ids(state: EngineState) -> list[str]:
    """Correlation ids the state knows: `<job>:<step>` of every step, then each job's id."""
    ids = [f"{job.id}:{name}" for job in state.jobs.values() for name in job.steps]
    return ids + list(state.jobs) + list(JOB_IDS)


def _correlation_id(reader: Reader, known: list[str]) -> str | None:
    mode = reader.byte() % 4
    if mode == 0:
        return None
    if mode == 1:
        return reader.pick(known)
    if mode == 2:
        return reader.pick(known) + reader.text()  # a known id, changed
    return reader.text()


def read_limits(reader: Reader) -> tuple[int, int]:
    """The limits the manager runs with: the default body size or a tiny one, and the default
    JSON depth or the most `--max-json-depth` allows (the worst case for the journal)."""
    choice = reader.byte()
    max_bytes = 64 if choice & 1 else MAX_MESSAGE_BYTES
    return max_bytes, jsontext.MAX_DEPTH if choice & 2 else DEFAULT_JSON_DEPTH


def read_delivery(reader: Reader, known: list[str]) -> Delivery:
    """A delivery: correlation id, reply_to, headers and body, each as the input says."""
    correlation_id = _correlation_id(reader, known)
    reply_to = reader.pick((None, "", "answers", None))
    if reply_to is None and reader.byte() & 1:
        reply_to = reader.text()
    headers = read_headers(reader)
    body = reader.blob() if reader.byte() & 1 else reader.json_value().encode()
    return Delivery(_QUEUE, body, correlation_id, reply_to, headers, message_id=None)


def _event(reader: Reader, state: EngineState, at: float) -> Event | intake.Undeliverable | None:
    """The next message as an engine event (None: nothing to apply)."""
    kind = reader.pick(_KINDS)
    known = _known_ids(state)
    max_bytes, max_depth = read_limits(reader)
    if kind == "trigger":
        delivery = read_delivery(reader, known)
        event = intake.trigger_event(delivery, at, _NEW_ID, max_bytes, max_depth=max_depth)
        if isinstance(event, JobSubmitted):
            # Orchestrator.pinned: a new job runs today's definition of its workflow.
            definition = state.current.get(event.workflow)
            if definition is not None:
                event = dataclasses.replace(event, definition=definition)
        return event
    if kind == "reply":
        return intake.reply_event(read_delivery(reader, known), at, max_bytes, max_depth)
    if kind == "signal":
        return intake.signal_event(read_delivery(reader, known), at, max_bytes, max_depth)
    if kind == "timer":
        return TimerFired(reader.pick(list(state.timers)), at) if state.timers else None
    job_id = reader.pick(known).partition(":")[0]
    return CancelRequested(job_id, at) if kind == "cancel" else RetryRequested(job_id, at)


def _check_storable(params: Iterable[tuple[Any, ...]], where: str) -> None:
    """Raise if a journal could not store these parameters (SQLite: UTF-8; PostgreSQL: no NUL)."""
    for values in params:
        for value in values:
            if isinstance(value, str):
                value.encode("utf-8")  # SQLite binds text as UTF-8: a lone surrogate fails
                if "\x00" in value:
                    raise ValueError(f"{where}: PostgreSQL cannot store a NUL in {value!r}")


def _journal(event: Event, state: EngineState) -> None:
    """Apply, record and encode one event as the orchestrator would."""
    _, commands = apply(state, event)
    result = record(event, commands, _QUEUE)
    if result.rejected is not None or result.refused is not None or result.duplicate:
        return  # nothing is journaled
    _check_storable((encode_event(row) for row in result.batch.events), "event row")
    _check_storable((encode_job(row) for row in result.batch.jobs), "job row")
    _check_storable((encode_sent(*sent) for sent in result.batch.sent), "sent mark")
    for command in commands:
        # Pipeline.archive_after_commit: a finished top-level job leaves memory once committed.
        if isinstance(command, JobFinished) and command.parent_id is None:
            apply(state, JobArchived(command.job_id, event.at))


def run_pipeline(reader: Reader) -> EngineState:
    """Up to six messages through intake, engine, recorder and codec, from a fresh state;
    returns the state they left."""
    state = EngineState.from_workflows(WORKFLOWS)
    at = 1_000_000.0
    for _ in range(reader.byte() % _MAX_MESSAGES + 1):
        at += reader.byte()
        event = _event(reader, state, at)
        if event is not None and not isinstance(event, intake.Undeliverable):
            _journal(event, state)
    return state
