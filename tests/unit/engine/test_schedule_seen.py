"""Since when a schedule exists: the first `ScheduleSeen` of it is kept (and journaled as
`ScheduleKnown`, a row that replays to the same), later ones change nothing."""

from __future__ import annotations

from tests.unit.engine.helpers import make_state
from workflow_manager.engine import ScheduleKnown, ScheduleSeen, apply, replay
from workflow_manager.journal.records import EventKind
from workflow_manager.recorder import record, since_journal_id, to_event

FLOW = """
workflows:
  - name: w
    schedules: [{name: nightly, cron: "0 2 * * *"}]
    steps: [{name: a}]
"""


def test_the_first_sight_of_a_schedule_is_kept_and_journaled_once():
    state = make_state(FLOW)
    first = apply(state, ScheduleSeen("w", "nightly", 5.0))[1]
    assert first == [ScheduleKnown("w", "nightly", 5.0)]
    assert apply(state, ScheduleSeen("w", "nightly", 9.0))[1] == []
    assert state.schedules_since == {"w/nightly": 5.0}


def test_its_row_is_kept_apart_from_the_pause_rows_and_replays_to_the_same_state():
    state = make_state(FLOW)
    event = ScheduleSeen("w", "nightly", 5.0)
    (row,) = record(event, apply(state, event)[1], "wm").batch.events
    assert (row.kind, row.job_id, row.at) == (
        EventKind.SCHEDULE,
        since_journal_id("w", "nightly"),
        5.0,
    )
    assert to_event(row) == event
    later = ScheduleSeen("w", "nightly", 7.0)  # a second manager's first start, a moment later
    assert replay(make_state(FLOW), [to_event(row), later]).schedules_since == {"w/nightly": 5.0}
