"""The metrics' arithmetic: what each command counts, and what recovery sets."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.engine import (
    Dispatch,
    EngineState,
    JobFinished,
    JobQueued,
    JobScheduled,
    JobStarted,
    JobSubmitted,
    StepFinished,
    StepWaiting,
    apply,
)
from workflow_manager.errors import FencedOut, JournalError
from workflow_manager.metrics import METRIC_NAMES, Metrics
from workflow_manager.observers import DeadLetterWatcher, Observer
from workflow_manager.term import rejoin_cause

WF = "books"
ROOT = "00000000-0000-4000-8000-000000000001"
CHILD = "00000000-0000-4000-8000-000000000002"


def started(job_id: str = ROOT, at: float = 100.0, parent: str | None = None) -> JobStarted:
    return JobStarted(job_id, ROOT, WF, "hash", WF, parent, {}, 90.0, at)


def finished(
    status: str = "completed", at: float = 110.0, job_id: str = ROOT, parent: str | None = None
) -> JobFinished:
    return JobFinished(
        job_id, ROOT, WF, "hash", WF, status, None, None, parent, {}, 90.0, at, {}
    )  # fmt: skip


def dispatch(step: str = "fetch", attempt: int = 1, job_id: str = ROOT) -> Dispatch:
    return Dispatch(job_id, ROOT, step, f"q.{step}", f"{job_id}:{step}", {}, WF, attempt)


def step_done(
    outcome: str = "completed",
    reason: str | None = None,
    dispatched_at: float | None = 100.0,
    at: float = 102.5,
    step: str = "fetch",
) -> StepFinished:
    return StepFinished(ROOT, ROOT, WF, step, 1, outcome, reason, None, dispatched_at, at)


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    """The sample `workflow_manager_<name>{labels}`, or None if there is none."""
    return metrics.registry.get_sample_value(f"workflow_manager_{name}", labels)


def test_metrics_is_an_observer_that_also_counts_dead_letters():
    metrics = Metrics()
    assert isinstance(metrics, DeadLetterWatcher)
    observer: Observer = metrics  # type-checks as the seam it joins at
    assert observer is metrics


def test_a_top_level_job_counts_once_started_running_and_ended_with_its_duration():
    metrics = Metrics()
    metrics.observe([started(at=100.0)])
    assert value(metrics, "jobs_started_total", workflow=WF) == 1
    assert value(metrics, "jobs_running", workflow=WF) == 1
    metrics.observe([finished("failed", at=112.5)])
    assert value(metrics, "jobs_running", workflow=WF) == 0
    assert value(metrics, "jobs_finished_total", workflow=WF, status="failed") == 1
    assert value(metrics, "job_duration_seconds_count", workflow=WF) == 1
    assert value(metrics, "job_duration_seconds_sum", workflow=WF) == 12.5
    # Retried: it starts again, and its second run is timed from the retry.
    metrics.observe([started(at=200.0)])
    metrics.observe([finished("completed", at=203.0)])
    assert value(metrics, "jobs_started_total", workflow=WF) == 2
    assert value(metrics, "jobs_running", workflow=WF) == 0
    assert value(metrics, "jobs_finished_total", workflow=WF, status="completed") == 1
    assert value(metrics, "job_duration_seconds_sum", workflow=WF) == 15.5
    assert value(metrics, "job_duration_seconds_bucket", workflow=WF, le="5.0") == 1


def test_a_queued_job_counts_as_queued_until_it_starts_or_is_cancelled():
    metrics = Metrics()
    queued = JobQueued(ROOT, WF, "hash", WF, {}, 90.0, 90.0, 0, ("all",))
    metrics.observe([queued])
    assert value(metrics, "jobs_queued", workflow=WF) == 1
    assert value(metrics, "jobs_running", workflow=WF) == 0
    metrics.observe([started(at=100.0)])
    assert value(metrics, "jobs_queued", workflow=WF) == 0
    assert value(metrics, "jobs_running", workflow=WF) == 1
    metrics.observe([finished(at=101.0)])
    metrics.observe([JobQueued(CHILD, WF, "hash", WF, {}, 95.0, 95.0, 0, ("all",))])
    metrics.observe([finished("cancelled", at=120.0, job_id=CHILD)])
    assert value(metrics, "jobs_queued", workflow=WF) == 0
    assert value(metrics, "jobs_running", workflow=WF) == 0  # it never ran
    assert value(metrics, "jobs_finished_total", workflow=WF, status="cancelled") == 1


def test_a_delayed_job_counts_scheduled_until_it_starts_or_is_cancelled():
    metrics = Metrics()
    other = "00000000-0000-4000-8000-000000000003"
    for job_id in (ROOT, other):
        metrics.observe([JobScheduled(job_id, WF, "hash", WF, {}, 90.0, 95.0, 90.0)])
    assert value(metrics, "jobs_scheduled", workflow=WF) == 2
    metrics.observe([started(at=95.0)])
    assert value(metrics, "jobs_scheduled", workflow=WF) == 1
    assert value(metrics, "jobs_running", workflow=WF) == 1
    metrics.observe([finished("cancelled", at=91.0, job_id=other)])
    assert value(metrics, "jobs_scheduled", workflow=WF) == 0
    assert value(metrics, "jobs_running", workflow=WF) == 1  # the cancelled one never ran
    assert value(metrics, "jobs_finished_total", workflow=WF, status="cancelled") == 1
    assert value(metrics, "job_duration_seconds_count", workflow=WF) == 0


def test_child_jobs_count_only_in_their_steps_under_the_top_level_workflow():
    metrics = Metrics()
    metrics.observe([started(CHILD, parent=ROOT), dispatch("tally", job_id=CHILD)])
    metrics.observe([finished(job_id=CHILD, parent=ROOT)])
    assert value(metrics, "jobs_started_total", workflow=WF) is None
    assert value(metrics, "jobs_running", workflow=WF) is None
    assert value(metrics, "step_requests_total", workflow=WF, step="tally") == 1


def test_each_dispatch_is_a_request_and_each_failed_attempt_a_failure_by_reason():
    metrics = Metrics()
    metrics.observe([dispatch(attempt=1)])
    metrics.observe([step_done("retrying", "timeout", 100.0, 130.0), dispatch(attempt=2)])
    metrics.observe([step_done("retrying", "invalid_reply", 130.0, 130.5), dispatch(attempt=3)])
    metrics.observe([step_done("failed", "error", 130.5, 131.0)])
    labels = {"workflow": WF, "step": "fetch"}
    assert value(metrics, "step_requests_total", **labels) == 3
    for reason in ("timeout", "invalid_reply", "error"):
        assert value(metrics, "step_failures_total", **labels, reason=reason) == 1
    assert value(metrics, "step_duration_seconds_count", **labels) == 3
    assert value(metrics, "step_duration_seconds_sum", **labels) == 31.0
    assert value(metrics, "step_duration_seconds_bucket", **labels, le="1.0") == 2


@pytest.mark.parametrize(
    ("outcome", "reason", "failures"),
    [("completed", None, None), ("retrying", None, 1.0), ("failed", "timeout", 1.0)],
)
def test_a_step_end_is_a_failure_only_when_the_attempt_failed(outcome, reason, failures):
    metrics = Metrics()
    metrics.observe([step_done(outcome, reason)])
    found = value(
        metrics, "step_failures_total", workflow=WF, step="fetch",
        reason=reason or "error",
    )  # fmt: skip
    assert found == failures


def test_a_step_with_no_dispatch_time_is_not_timed():
    metrics = Metrics()
    metrics.observe([step_done(dispatched_at=None)])
    count = value(metrics, "step_duration_seconds_count", workflow=WF, step="fetch")
    assert count is None


def test_recovery_sets_the_running_gauge_from_the_top_level_jobs():
    workflows = parse_workflows(
        """
workflows:
  - name: books
    steps:
      - {name: each, task: per}
    tasks:
      - name: per
        itemListKey: items
        steps:
          - name: work
  - name: idle
    steps:
      - name: only
"""
    )
    state = EngineState.from_workflows(workflows)
    for n in range(3):
        job_id = f"00000000-0000-4000-8000-00000000001{n}"
        apply(state, JobSubmitted(job_id, WF, {"items": [1, 2]}, 50.0 + n))
    assert len(state.jobs) == 9  # three jobs, two children each
    later = "00000000-0000-4000-8000-000000000020"
    apply(state, JobSubmitted(later, WF, {"items": [1]}, 60.0, not_before=500.0))
    metrics = Metrics(workflows)
    metrics.observe([started("00000000-0000-4000-8000-0000000000ff", at=1.0)])
    metrics.recovered(state.jobs.values())
    assert value(metrics, "jobs_running", workflow=WF) == 3
    assert value(metrics, "jobs_scheduled", workflow=WF) == 1
    assert value(metrics, "jobs_running", workflow="idle") == 0
    # A recovered job ends: timed from its submission (90.0), as it started before the restart.
    metrics.observe([finished(at=100.0, job_id="00000000-0000-4000-8000-000000000010")])
    assert value(metrics, "jobs_running", workflow=WF) == 2
    assert value(metrics, "job_duration_seconds_sum", workflow=WF) == 10.0


def test_dead_letters_count_by_reason():
    metrics = Metrics()
    for reason in ("bad_reply", "unknown_workflow", "bad_reply"):
        metrics.dead_lettered(reason)
    assert value(metrics, "dead_letters_total", reason="bad_reply") == 2
    assert value(metrics, "dead_letters_total", reason="unknown_workflow") == 1


def test_journal_commits_are_timed():
    metrics = Metrics()
    metrics.journal_committed(0.002)
    metrics.journal_committed(0.2)
    assert value(metrics, "journal_commit_seconds_count") == 2
    assert value(metrics, "journal_commit_seconds_bucket", le="0.0025") == 1


@dataclass
class Source:
    connected: bool
    publishes_pending: int


def test_the_broker_and_outbox_gauges_are_read_when_scraped():
    metrics, source = Metrics(), Source(True, 3)
    metrics.watch(source)
    assert value(metrics, "broker_connected") == 1
    assert value(metrics, "outbox_pending") == 3
    source.connected, source.publishes_pending = False, 0
    assert value(metrics, "broker_connected") == 0
    assert value(metrics, "outbox_pending") == 0


def test_each_manager_has_its_own_registry():
    first, second = Metrics(), Metrics()
    first.observe([started()])
    assert value(first, "jobs_started_total", workflow=WF) == 1
    assert value(second, "jobs_started_total", workflow=WF) is None


def test_the_text_names_every_metric_with_its_type():
    text = Metrics().render().decode()
    for name, kind in METRIC_NAMES.items():
        assert f"# TYPE {name} {kind}\n" in text, name


def test_a_skipped_step_counts_as_skipped_and_neither_timed_nor_failed():
    metrics = Metrics()
    metrics.observe([step_done("skipped", None, 5.0, 5.0)])
    labels = {"workflow": WF, "step": "fetch"}
    assert value(metrics, "steps_skipped_total", **labels) == 1
    assert value(metrics, "step_duration_seconds_count", **labels) is None
    assert value(metrics, "step_failures_total", **labels, reason="error") is None


def test_waiting_steps_count_until_signalled_or_their_job_ends():
    metrics = Metrics()
    metrics.observe([StepWaiting(ROOT, ROOT, WF, "approve", 100.0)])
    metrics.observe([StepWaiting(CHILD, ROOT, WF, "approve", 100.0)])
    assert value(metrics, "steps_waiting", workflow=WF, step="approve") == 2
    metrics.observe([step_done(step="approve")])  # the signal completed ROOT's
    assert value(metrics, "steps_waiting", workflow=WF, step="approve") == 1
    metrics.observe([finished("cancelled", job_id=CHILD, parent=ROOT)])
    assert value(metrics, "steps_waiting", workflow=WF, step="approve") == 0


def test_recovery_sets_the_waiting_gauge():
    workflows = parse_workflows(
        "workflows:\n  - name: books\n    steps:\n      - {name: approve, wait: true}\n"
    )
    state = EngineState.from_workflows(workflows)
    apply(state, JobSubmitted(ROOT, WF, {}, 50.0))
    metrics = Metrics(workflows)
    metrics.observe([StepWaiting(CHILD, ROOT, WF, "approve", 1.0)])  # from before the restart
    metrics.recovered(state.jobs.values())
    assert value(metrics, "steps_waiting", workflow=WF, step="approve") == 1


def test_a_recovered_step_counts_as_recovered_and_is_not_timed_again():
    metrics = Metrics()
    metrics.observe([step_done("failed", "error", 100.0, 101.0)])
    metrics.observe([step_done("recovered", None, 100.0, 109.0)])
    labels = {"workflow": WF, "step": "fetch"}
    assert value(metrics, "steps_recovered_total", **labels) == 1
    assert value(metrics, "step_duration_seconds_count", **labels) == 1
    assert value(metrics, "step_failures_total", **labels, reason="error") == 1


def test_rejoins_count_by_cause():
    metrics = Metrics()
    causes = [
        rejoin_cause(FencedOut("taken over")),
        rejoin_cause(JournalError("database away")),
        rejoin_cause(FencedOut("not renewed")),
        rejoin_cause(RuntimeError("a bug")),
    ]
    for cause in causes:
        metrics.rejoined(cause)
    assert value(metrics, "rejoins_total", cause="lease") == 2
    assert value(metrics, "rejoins_total", cause="database") == 1
    assert value(metrics, "rejoins_total", cause="error") == 1
