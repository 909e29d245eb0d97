"""The hub on its own: numbering, the ring, resume, filters, bounded subscriber queues."""

from __future__ import annotations

import pytest

from workflow_manager.engine import (
    Dispatch,
    JobFinished,
    JobsReleased,
    JobStarted,
    StepFinished,
    Subject,
)
from workflow_manager.events import EventFilter, EventHub, parse_event_id, run_events

ROOT = "11111111-1111-4111-8111-111111111111"
CHILD = "22222222-2222-4222-8222-222222222222"


def started(job: str = ROOT, parent: str | None = None, at: float = 10.0) -> JobStarted:
    return JobStarted(job, ROOT, "wf", "hash", "wf", parent, {}, 1.0, at)


def dispatch(step: str = "a", attempt: int = 1, job: str = ROOT) -> Dispatch:
    return Dispatch(job, ROOT, step, step, f"{job}:{step}", {}, "wf", attempt)


def finished(status: str = "completed", job: str = ROOT, parent: str | None = None) -> JobFinished:
    return JobFinished(job, ROOT, "wf", "h", "wf", status, None, None, parent, {}, 1.0, 12.0, {})


def step_finished(outcome: str, reason: str | None = None) -> StepFinished:
    return StepFinished(ROOT, ROOT, "wf", "a", 1, outcome, reason, "why", 10.5, 11.0)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (started(), {"type": "job.started", "status": "running", "at": 10.0}),
        (started(CHILD, ROOT), {"type": "job.started", "job": CHILD, "parent": ROOT}),
        (finished("cancelled"), {"type": "job.cancelled", "status": "cancelled", "at": 12.0}),
        (dispatch("b", 3), {"type": "step.dispatched", "step": "b", "attempt": 3, "at": 99.0}),
        (step_finished("completed", "error"), {"type": "step.completed", "at": 11.0}),
        (step_finished("retrying", "timeout"), {"type": "step.retrying", "reason": "timeout"}),
        (step_finished("failed", "invalid_reply"), {"type": "step.failed", "status": "failed"}),
    ],
)
def test_each_command_becomes_its_event(command, expected):
    (event,) = run_events([Subject(ROOT, ROOT), command], now=99.0)
    body = event.to_json()
    assert body.items() >= {"job": ROOT, "root": ROOT, "workflow": "wf", **expected}.items()
    if event.type == "step.completed":
        assert "reason" not in body  # a completed step has no failure reason


def test_a_dispatch_is_dated_by_the_event_it_came_with():
    events = run_events([step_finished("completed"), dispatch("b")], now=99.0)
    assert [e.at for e in events] == [11.0, 11.0]


def test_ids_count_up_and_a_resume_gets_what_was_missed_filtered():
    hub = EventHub(clock=lambda: 5.0)
    hub.observe([started(), dispatch("a")])
    hub.observe([started(CHILD, ROOT), dispatch("c", job=CHILD)])
    assert hub.latest_id == "5000-4" and parse_event_id(hub.latest_id) == (5000, 4)
    _, resume = hub.subscribe(EventFilter(job=CHILD), after="5000-1")
    assert resume.reset is None
    assert [(e.id, e.type) for e in resume.backlog] == [
        ("5000-3", "job.started"),
        ("5000-4", "step.dispatched"),
    ]


@pytest.mark.parametrize(
    ("after", "reason"),
    [("5000-1", "no longer kept"), ("4000-4", "another manager"), ("5000-9", "no event 5000-9")],
)
def test_a_resume_the_ring_cannot_serve_is_a_reset(after, reason):
    hub = EventHub(capacity=2, clock=lambda: 5.0)
    hub.observe([started(), dispatch("a"), dispatch("b"), dispatch("c")])  # the ring keeps 3, 4
    _, resume = hub.subscribe(EventFilter(), after=after)
    assert reason in (resume.reset or "") and resume.backlog == []
    assert resume.latest_id == "5000-4"
    _, fine = hub.subscribe(EventFilter(), after="5000-2")  # missed 3 and 4: both kept
    assert fine.reset is None and [e.id for e in fine.backlog] == ["5000-3", "5000-4"]


def test_a_subscriber_that_falls_behind_is_overflowed_and_its_queue_dropped():
    hub = EventHub(queue_limit=3)
    subscription, _ = hub.subscribe(EventFilter())
    hub.observe([dispatch(str(n)) for n in range(10)])
    assert subscription.overflowed
    assert subscription.queued == 0  # memory freed at once, not when it reads
    subscription.close()
    assert hub.subscribers == 0


def test_filters_match_the_job_its_children_and_the_workflow():
    child_event = run_events([dispatch(job=CHILD)], 1.0)[0]
    assert EventFilter(job=ROOT).matches(child_event)
    assert EventFilter(job=CHILD).matches(child_event)
    assert not EventFilter(job="33333333-3333-4333-8333-333333333333").matches(child_event)
    assert EventFilter(workflow="wf").matches(child_event)
    assert not EventFilter(job=ROOT, workflow="other").matches(child_event)


async def test_closing_the_hub_ends_every_stream_and_any_opened_after():
    hub = EventHub()
    before, _ = hub.subscribe(EventFilter())
    hub.close()
    after, _ = hub.subscribe(EventFilter())
    assert before.closed and after.closed
    assert await after.next_batch(timeout_s=60) == []  # at once, not after the timeout


async def test_a_hand_over_ends_the_streams_following_its_jobs_and_no_other():
    hub = EventHub()
    root, _ = hub.subscribe(EventFilter(job=ROOT))
    child, _ = hub.subscribe(EventFilter(job=CHILD))
    other, _ = hub.subscribe(EventFilter(job="33333333-3333-4333-8333-333333333333"))
    everything, _ = hub.subscribe(EventFilter(workflow="wf"))
    hub.observe([JobsReleased((ROOT, CHILD))])
    assert root.closed and child.closed
    assert await child.next_batch(timeout_s=60) == []  # at once: the stream ends
    assert not other.closed and not everything.closed
