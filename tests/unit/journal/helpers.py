"""Row builders for the journal tests: short calls with the fields a test cares about."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

from workflow_manager.journal import EventKind, EventRow, JobRow

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def event(
    kind: str, job_id: str | None = None, root_id: str | None = None, **fields: Any
) -> EventRow:
    """An event row at T0 (or `at=`); root_id defaults to the job id (a top-level job)."""
    fields.setdefault("at", T0)
    return EventRow(kind=kind, job_id=job_id, root_id=root_id or job_id, **fields)


def submitted(job_id: str, root_id: str | None = None, **fields: Any) -> EventRow:
    fields.setdefault("body", b'{"text": "hi"}')
    return event(EventKind.SUBMITTED, job_id, root_id, **fields)


def replied(job_id: str, root_id: str | None = None, **fields: Any) -> EventRow:
    fields = {"step": "s", "attempt": 1, "body": b"{}", **fields}
    return event(EventKind.REPLIED, job_id, root_id, **fields)


def dispatched(job_id: str, msg_id: str, root_id: str | None = None, **fields: Any) -> EventRow:
    fields = {"step": "s", "attempt": 1, **fields}
    return event(EventKind.DISPATCHED, job_id, root_id, msg_id=msg_id, **fields)


def job(
    job_id: str,
    *,
    root_id: str | None = None,
    parent_id: str | None = None,
    status: str = "running",
    workflow: str = "wc",
    submitted_at: float = T0,
    finished_at: float | None = None,
    **fields: Any,
) -> JobRow:
    """A job row; top-level (its own root) unless `parent_id` is given."""
    return JobRow(
        id=job_id,
        root_id=root_id or job_id,
        parent_id=parent_id,
        workflow=workflow,
        definition="h1",
        flow=workflow,
        status=status,
        submitted_at=submitted_at,
        finished_at=finished_at,
        payload=fields.pop("payload", {"text": "hi"}),
        **fields,
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def remount_read_only(point: Path) -> None:
    """Make the tmpfs at `point` read-only (even root cannot write there then)."""
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
