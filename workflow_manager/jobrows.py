"""The journal rows that say where a job is: started, waiting to start, waiting for a signal,
ended. Part of what `workflow_manager.recorder.record` writes for an applied event.

A top-level job has a row in the journal's jobs table from its submission on (replaced as it
moves); a child job gets one only when it ends. Each top-level change also writes an event row
(started, scheduled, queued, finished) that the UI's history reads and replay skips.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import JobFinished, JobQueued, JobScheduled, JobStarted, StepWaiting
from workflow_manager.journal import Batch, EventKind, EventRow, JobRow

__all__ = ["job_rows"]


def _started(command: JobStarted, batch: Batch) -> None:
    if command.parent_id is not None:
        # A child job is written once, when it ends: a fan-out of N children would otherwise
        # cost 3N more rows. Its messages (dispatched, replied) are journaled as any step's,
        # and while it runs it is in memory, where the API reads it.
        return
    batch.jobs.append(_open_row(command, command.root_id, "running", batch.partition))
    _job_event(batch, command, EventKind.STARTED, {"flow": command.flow})


def job_rows(
    command: JobStarted | JobScheduled | JobQueued | JobFinished | StepWaiting,
    batch: Batch,
    ended: list[JobRow],
) -> None:
    """Add the rows saying where a job is (started, waiting to start, waiting for a signal,
    ended) to `batch`; the row of a job that ended also goes to `ended`, to serve reads until
    the batch is committed."""
    if isinstance(command, JobStarted):
        _started(command, batch)
    elif isinstance(command, StepWaiting):
        if command.job_id != command.root_id:
            batch.events.append(_child_waiting(command))
    elif isinstance(command, JobFinished):
        ended.append(_finished(command, batch))
    else:
        _waiting(command, batch)


def _child_waiting(command: StepWaiting) -> EventRow:
    """The row of a child job's step that waits for a signal. The signal may reach any manager,
    which finds the child's partition from this row when the child has journaled nothing else."""
    return EventRow(
        at=command.at, kind=EventKind.WAITING, job_id=command.job_id, root_id=command.root_id,
        step=command.step,
    )  # fmt: skip


def _waiting(command: JobScheduled | JobQueued, batch: Batch) -> None:
    """The row of a job waiting to start (scheduled or queued: recovery brings it back), and
    its event: when it starts, or which concurrency limits it waits for."""
    if isinstance(command, JobScheduled):
        batch.jobs.append(_open_row(command, command.job_id, "scheduled", batch.partition))
        _job_event(batch, command, EventKind.SCHEDULED, {"start_at": command.start_at})
        return
    batch.jobs.append(_open_row(command, command.job_id, "queued", batch.partition))
    meta = {"scopes": list(command.scopes), "priority": command.priority}
    _job_event(batch, command, EventKind.QUEUED, meta)


def _job_event(
    batch: Batch, command: JobStarted | JobScheduled | JobQueued, kind: str, meta: dict[str, Any]
) -> None:
    """A top-level job's journal row saying what happened to it (read, never replayed)."""
    batch.events.append(
        EventRow(at=command.at, kind=kind, job_id=command.job_id, root_id=command.job_id, meta=meta)
    )


def _open_row(
    command: JobStarted | JobScheduled | JobQueued, root_id: str, status: str, partition: int | None
) -> JobRow:
    """The row of a top-level job that has not ended (it is replaced when it ends)."""
    return JobRow(
        id=command.job_id, root_id=root_id, parent_id=None, workflow=command.workflow,
        definition=command.definition, flow=command.flow, status=status,
        submitted_at=command.submitted_at, finished_at=None, payload=command.payload,
        partition=partition,
    )  # fmt: skip


def _finished(command: JobFinished, batch: Batch) -> JobRow:
    snapshot = command.snapshot
    row = JobRow(
        id=command.job_id, root_id=command.root_id, parent_id=command.parent_id,
        workflow=command.workflow, definition=command.definition, flow=command.flow,
        status=str(command.status), submitted_at=command.submitted_at,
        finished_at=snapshot["finished_at"], payload=command.payload, result=command.result,
        error=command.error, snapshot=snapshot, partition=batch.partition,
    )  # fmt: skip
    batch.jobs.append(row)
    if command.parent_id is None:
        meta: dict[str, Any] = {"status": str(command.status)}
        if command.error:
            meta["error"] = command.error
        batch.events.append(
            EventRow(
                at=command.at,
                kind=EventKind.FINISHED,
                job_id=command.job_id,
                root_id=command.root_id,
                meta=meta,
            )  # fmt: skip
        )
    return row
