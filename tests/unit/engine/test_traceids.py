"""Trace ids: derived span ids, traceparent parsing, and a job's trace in the engine and journal."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.engine.helpers import JOB, TRACE, make_state, of_type, workflows
from workflow_manager.engine import EngineState, JobStarted, JobSubmitted, apply, replay
from workflow_manager.engine.snapshot import restore, snapshot
from workflow_manager.engine.traceids import (
    TraceParent,
    derived_trace_id,
    job_span_id,
    parse_traceparent,
    step_span_id,
    traceparent,
)
from workflow_manager.journal.records import REPLAYED_KINDS
from workflow_manager.recorder import record, to_event

HEX16 = re.compile(r"[0-9a-f]{16}")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
FAN = """
workflows:
  - name: w
    steps:
      - {name: fan, task: t}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
"""


@given(st.uuids().map(str), st.text(min_size=1), st.integers(min_value=0, max_value=2**31))
def test_span_ids_are_16_hex_digits_never_zero_and_the_same_each_time(job_id, step, attempt):
    span = step_span_id(job_id, step, attempt)
    assert HEX16.fullmatch(span) and span != "0" * 16
    assert span == step_span_id(job_id, step, attempt)
    assert HEX16.fullmatch(job_span_id(job_id)) and job_span_id(job_id) != "0" * 16


def test_span_ids_differ_by_job_step_and_attempt():
    other = str(uuid.uuid4())
    spans = {
        step_span_id(JOB, "a", 1),
        step_span_id(JOB, "a", 2),
        step_span_id(JOB, "b", 1),
        step_span_id(other, "a", 1),
        job_span_id(JOB),
        job_span_id(other),
    }
    assert len(spans) == 6


def test_a_derived_trace_id_is_the_job_ids_hex_and_never_zero():
    assert derived_trace_id(JOB) == JOB.replace("-", "")
    assert derived_trace_id(str(uuid.UUID(int=0))) == "0" * 31 + "1"
    assert re.fullmatch(r"[0-9a-f]{32}", derived_trace_id("not-a-uuid"))


def test_traceparent_writes_version_00_sampled_and_reads_back():
    header = traceparent(TRACE_ID, SPAN_ID)
    assert header == f"00-{TRACE_ID}-{SPAN_ID}-01"
    assert parse_traceparent(header) == TraceParent(TRACE_ID, SPAN_ID)
    assert parse_traceparent(header.encode()) == TraceParent(TRACE_ID, SPAN_ID)


@pytest.mark.parametrize(
    "value",
    [
        None,
        42,
        "",
        "garbage",
        f"00-{TRACE_ID}-{SPAN_ID}",  # no flags
        f"00-{TRACE_ID.upper()}-{SPAN_ID}-01",  # upper case is invalid
        f"00-{'0' * 32}-{SPAN_ID}-01",  # all-zero trace id
        f"00-{TRACE_ID}-{'0' * 16}-01",  # all-zero span id
        f"ff-{TRACE_ID}-{SPAN_ID}-01",  # version ff is forbidden
        f"00-{TRACE_ID}-{SPAN_ID}-01-extra",  # version 00 has exactly four fields
        f"00-{TRACE_ID[:-1]}-{SPAN_ID}-01",  # short trace id
        f"00-{TRACE_ID}-{SPAN_ID}x-01",
        f"0g-{TRACE_ID}-{SPAN_ID}-01",
    ],
)
def test_a_malformed_traceparent_reads_as_none(value):
    assert parse_traceparent(value) is None


def test_a_later_version_may_carry_more_fields():
    assert parse_traceparent(f"01-{TRACE_ID}-{SPAN_ID}-01-what-ever") == TraceParent(
        TRACE_ID, SPAN_ID
    )


def test_a_submission_without_a_trace_gets_one_derived_from_its_id():
    state = make_state(FAN)
    _, commands = apply(state, JobSubmitted(JOB, "w", {"items": [1]}, 1.0))
    assert state.jobs[JOB].trace_id == TRACE
    assert of_type(commands, JobStarted)[0].trace_id == TRACE


def test_children_join_the_top_level_trace_under_their_task_steps_span():
    state = make_state(FAN)
    event = JobSubmitted(JOB, "w", {"items": [1, 2]}, 1.0, trace_id=TRACE_ID, trace_parent=SPAN_ID)
    _, commands = apply(state, event)
    started = of_type(commands, JobStarted)
    assert [(s.trace_id, s.trace_parent) for s in started] == [
        (TRACE_ID, SPAN_ID),
        (TRACE_ID, step_span_id(JOB, "fan", 0)),
        (TRACE_ID, step_span_id(JOB, "fan", 0)),
    ]


def test_the_trace_is_journaled_with_the_submission_and_replays_exactly():
    defs = workflows(FAN)
    live = EngineState.from_workflows(defs)
    event = JobSubmitted(JOB, "w", {"items": [1]}, 1.0, trace_id=TRACE_ID, trace_parent=SPAN_ID)
    rows = record(event, apply(live, event)[1], "wm").batch.events
    events = [to_event(row) for row in rows if row.kind in REPLAYED_KINDS]
    assert events == [event]
    replayed = replay(EngineState.from_workflows(defs), events)
    assert replayed == live and replayed.jobs[JOB].trace_parent == SPAN_ID


def test_a_snapshot_keeps_the_trace_and_an_old_one_gets_the_derived_trace():
    state = make_state(FAN)
    event = JobSubmitted(JOB, "w", {"items": []}, 1.0, trace_id=TRACE_ID, trace_parent=SPAN_ID)
    apply(state, event)
    job = state.jobs[JOB]
    data = snapshot(job)
    assert (restore(data, job.workflow).trace_id, restore(data, job.workflow).trace_parent) == (
        TRACE_ID,
        SPAN_ID,
    )
    old = {k: v for k, v in data.items() if k not in ("trace_id", "trace_parent")}
    assert restore(old, job.workflow).trace_id == TRACE
