"""What `workflow-manager watch` draws from a job's detail. Pure."""

from __future__ import annotations

import pytest

from workflow_manager.watch import progress_bar, render_job_view


@pytest.mark.parametrize(
    ("done", "total", "expected"),
    [
        (0, 4, "[--------] 0/4"),
        (1, 4, "[##------] 1/4"),
        (4, 4, "[########] 4/4"),
        (0, 0, "[--------] 0/0"),
    ],  # fmt: skip
)
def test_progress_bar(done, total, expected):
    assert progress_bar(done, total, width=8) == expected


def test_a_job_shows_each_started_step_in_start_order_with_status_and_progress():
    job = {
        "uuid": "j1",
        "workflow": "books",
        "status": "running",
        "completed": [
            {"name": "__start__", "startTime": "2026-01-01T00:00:00.000Z"},
            {"name": "shelve", "startTime": "2026-01-01T00:00:01.000Z", "elapsed": 0.5},
        ],
        "running": [
            {
                "name": "each",
                "startTime": "2026-01-01T00:00:02.000Z",
                "tasks": ["a"] * 10,
                "tasks_total": 10,
                "tasks_done": 4,
            },
            {
                "name": "title",
                "startTime": "2026-01-01T00:00:01.500Z",
                "elapsed": 3.0,
                "attempt": 2,
                "retrying": True,
                "lastError": "flaky",
            },
        ],  # fmt: skip
        "failed": [
            {
                "name": "boom",
                "startTime": "2026-01-01T00:00:03.000Z",
                "elapsed": 0.1,
                "message": {"message": "no disk"},
            },
        ],  # fmt: skip
    }
    lines = render_job_view(job)
    assert lines[0] == "job j1  books  running"
    assert [line.split()[1] for line in lines[1:]] == ["shelve", "title", "each", "boom"]
    assert "✓ shelve" in lines[1] and "completed" in lines[1] and "0.50s" in lines[1]
    assert "↻ title" in lines[2] and "retrying" in lines[2] and "attempt 2" in lines[2]
    assert "last error: flaky" in lines[2]
    assert "▶ each" in lines[3] and "[#########---------------] 4/10" in lines[3]
    assert "✗ boom" in lines[4] and "no disk" in lines[4]


def test_a_compensating_job_lists_its_compensations_in_run_order():
    job = {
        "uuid": "j1",
        "workflow": "order",
        "status": "failed",
        "error": {"step": "ship", "message": "no courier"},
        "compensations": {
            "reason": "failed",
            "runs": [
                {"step": "charge", "name": "refund", "status": "failed", "error": "refused"},
                {"step": "reserve", "name": "release", "status": "running"},
            ],
        },
    }
    assert render_job_view(job)[-3:] == [
        "  compensations (the job failed), last completed first:",
        "    refund undoes charge: failed  error: refused",
        "    release undoes reserve: running",
    ]
