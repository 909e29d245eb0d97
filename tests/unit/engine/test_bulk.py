"""Bulk actions in the engine (engine/bulk.py): a bulk fixes its jobs, each slice applies its
jobs' events as if each came alone, a slice that does not start where the bulk stands is
refused (no job twice), refusals are counted with why, and replaying the bulk's journal rows
brings it back to where it stood."""

from __future__ import annotations

from tests.unit.engine.helpers import make_state, of_type
from workflow_manager.engine import (
    BulkProgress,
    BulkRequested,
    BulkSlice,
    CancelRequested,
    JobFinished,
    JobSubmitted,
    PauseRequested,
    Refused,
    Subject,
    apply,
    replay,
)
from workflow_manager.journal import EventKind
from workflow_manager.recorder import record
from workflow_manager.recovered import to_event

WORKFLOWS = """
workflows:
  - name: w
    steps:
      - {name: a}
"""
JOBS = [f"00000000-0000-4000-8000-00000000000{i}" for i in range(4)]
BULK = "b0000000-0000-4000-8000-000000000000"


def _running(ids: list[str] = JOBS):
    state = make_state(WORKFLOWS)
    for job_id in ids:
        apply(state, JobSubmitted(job_id, "w", {}, 1.0))
    return state


def _slice(start: int, ids: list[str], at: float = 3.0) -> BulkSlice:
    return BulkSlice(BULK, start, tuple(CancelRequested(job, at) for job in ids), at)


def test_a_bulk_cancels_its_jobs_slice_by_slice_and_a_slice_done_is_refused():
    state = _running()
    _, commands = apply(state, BulkRequested(BULK, "cancel", tuple(JOBS[:3]), 2.0))
    assert of_type(commands, BulkProgress)[0].total == 3
    _, commands = apply(state, _slice(0, JOBS[:2]))
    # Each job's Subject names its own event: the journal files a row of it under that job.
    subjects = of_type(commands, Subject)
    assert [s.job_id for s in subjects] == [f"bulk:{BULK}", *JOBS[:2]]
    assert [s.event.job_id for s in subjects[1:]] == JOBS[:2]
    assert {f.job_id for f in of_type(commands, JobFinished)} == set(JOBS[:2])
    (progress,) = of_type(commands, BulkProgress)
    assert (progress.done, progress.changed, progress.finished) == (2, 2, False)

    _, again = apply(state, _slice(0, JOBS[:2]))  # before a restart, say: done already
    assert isinstance(again[0], Refused) and "carried out already" in again[0].reason
    _, wrong = apply(state, _slice(2, [JOBS[3]]))  # not the bulk's next job
    assert isinstance(wrong[0], Refused) and "not for its jobs" in wrong[0].reason

    assert state.bulks[BULK].changed == 2
    _, commands = apply(state, _slice(2, [JOBS[2]]))
    (progress,) = of_type(commands, BulkProgress)
    assert (progress.done, progress.total, progress.finished) == (3, 3, True)
    assert BULK not in state.bulks  # finished: its journal rows answer for it
    assert state.jobs[JOBS[3]].is_running  # not matched: not touched
    _, late = apply(state, _slice(2, [JOBS[2]]))
    assert isinstance(late[0], Refused)


def test_jobs_the_action_cannot_change_are_counted_with_why():
    state = _running(JOBS[:2])
    apply(state, CancelRequested(JOBS[0], 1.5))
    apply(state, BulkRequested(BULK, "pause", tuple(JOBS[:2]), 2.0))
    events = tuple(PauseRequested(job, True, 3.0) for job in JOBS[:2])
    _, commands = apply(state, BulkSlice(BULK, 0, events, 3.0))
    (progress,) = of_type(commands, BulkProgress)
    assert (progress.changed, progress.refused) == (1, 1)
    assert progress.errors[0][0] == JOBS[0] and "cancelled" in progress.errors[0][1]
    gone = BulkSlice(BULK, 0, events, 3.0, ended=((JOBS[0], "completed"),))
    state = _running(JOBS[1:2])
    apply(state, BulkRequested(BULK, "pause", tuple(JOBS[:2]), 2.0))
    _, commands = apply(state, gone)
    (progress,) = of_type(commands, BulkProgress)
    assert progress.errors == ((JOBS[0], f"job {JOBS[0]} is already completed; only a running "
                                "job can be paused"),)  # fmt: skip


def test_replaying_the_bulks_rows_brings_it_back_to_where_it_stood():
    live = _running()
    asked = BulkRequested(BULK, "cancel", tuple(JOBS), 2.0, filter={"workflow": "w"})
    rows = []
    for event in (asked, _slice(0, JOBS[:2])):
        _, commands = apply(live, event)
        rows += record(event, commands, "replies").batch.events
    bulk_rows = [row for row in rows if row.root_id == f"bulk:{BULK}"]
    assert [row.kind for row in bulk_rows] == [
        EventKind.BULK, EventKind.BULK_STEP, EventKind.BULK_STEP
    ]
    # Recovery replays the bulk's own rows; the cancelled jobs' trees have ended.
    state = replay(make_state(WORKFLOWS), [to_event(row) for row in bulk_rows])
    assert state.bulks[BULK] == live.bulks[BULK]
    assert state.bulks[BULK].next == 2
