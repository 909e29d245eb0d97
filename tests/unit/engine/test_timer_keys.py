"""Timer keys: a closed union inside the engine, the journal's text format at the edge."""

from __future__ import annotations

import pytest

from workflow_manager.engine import timers
from workflow_manager.engine.timers import (
    CompensationRetry,
    CompensationTimeout,
    JobAdmit,
    JobRateRelease,
    JobStart,
    JobTimeout,
    RateRelease,
    RetryDue,
    StepRelease,
    StepTimeout,
    Timer,
    parse,
    parse_timer,
)

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"

# The text each timer has always had in journals: recovery reads old journals unchanged.
WIRE: list[tuple[Timer, str]] = [
    (StepTimeout(JOB, "fetch", 2), f"timeout:{JOB}:fetch:2"),
    (RetryDue(JOB, "fetch", 3), f"retry:{JOB}:fetch:3"),
    (JobTimeout(JOB), f"job-timeout:{JOB}"),
    (JobStart(JOB), f"start:{JOB}"),
    (JobAdmit(JOB), f"admit:{JOB}"),
    (JobRateRelease(JOB), f"job-rate:{JOB}"),
    (StepRelease(JOB, "fetch", 1), f"release:{JOB}:fetch:1"),
    (RateRelease(JOB, "fetch", 2), f"rate:{JOB}:fetch:2"),
    (CompensationTimeout(JOB, 4, 1), f"compensation-timeout:{JOB}:4:1"),
    (CompensationRetry(JOB, 0, 2), f"compensation-retry:{JOB}:0:2"),
]


@pytest.mark.parametrize(("timer", "text"), WIRE, ids=[text.split(":")[0] for _, text in WIRE])
def test_a_timer_has_its_journal_text_and_parses_back_to_itself(timer: Timer, text: str):
    assert timer.key == text
    assert parse_timer(text) == timer
    assert parse_timer(timer.key) == timer


def test_the_key_builders_write_the_same_text():
    assert timers.step_timeout(JOB, "a", 1) == StepTimeout(JOB, "a", 1).key
    assert timers.retry_due(JOB, "a", 2) == RetryDue(JOB, "a", 2).key
    assert timers.job_timeout(JOB) == JobTimeout(JOB).key
    assert timers.job_start(JOB) == JobStart(JOB).key
    assert timers.job_admit(JOB) == JobAdmit(JOB).key
    assert timers.job_rate_release(JOB) == JobRateRelease(JOB).key
    assert timers.step_release(JOB, "a", 1) == StepRelease(JOB, "a", 1).key
    assert timers.compensation_timeout(JOB, 3, 1) == CompensationTimeout(JOB, 3, 1).key
    assert timers.compensation_retry(JOB, 3, 2) == CompensationRetry(JOB, 3, 2).key


@pytest.mark.parametrize(
    "text",
    [
        "",
        "nonsense",
        "job-timeout:",
        "start:",
        f"timeout:{JOB}:a",
        f"timeout:{JOB}:a:x",
        f"retry:{JOB}:a:1:2",
        f"compensation-timeout:{JOB}:first:1",
        f"bogus:{JOB}:a:1",
    ],
)
def test_text_that_is_not_a_timer_of_ours_parses_to_none(text: str):
    assert parse_timer(text) is None


def test_the_flat_view_names_kind_job_step_and_attempt():
    flat = parse(f"retry:{JOB}:fetch:3")
    assert flat is not None
    assert (flat.kind, flat.job_id, flat.step, flat.attempt, flat.is_retry) == (
        "retry", JOB, "fetch", 3, True
    )  # fmt: skip
    start = parse(f"start:{JOB}")
    assert start is not None
    assert (start.kind, start.job_id, start.step, start.attempt) == ("start", JOB, None, None)
    assert parse(f"compensation-retry:{JOB}:2:1") == timers.TimerKey(
        "compensation-retry", JOB, "2", 1
    )
    assert parse("nonsense") is None


def test_held_work_is_the_job_admit_the_step_release_and_the_rate_releases():
    assert set(timers.HELD_WORK) == {JobAdmit, JobRateRelease, StepRelease, RateRelease}
