"""A running task step with a join shows how many children it needs besides done and total."""

from __future__ import annotations

from tests.unit.engine.helpers import JOB, child_id, cid, make_state, reply, submit
from workflow_manager.api.views import step_entry

FLOW = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
        join: {join}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
"""


def _entry(join: str) -> dict:
    state = make_state(FLOW.format(join=join))
    submit(state, "w", {"items": list(range(4))})
    reply(state, cid(child_id(JOB, "fan", 0), "leaf"), {"item": 1})
    job = state.jobs[JOB]
    return step_entry(job.steps["fan"], job, 3.0)


def test_a_join_step_shows_needed_done_and_total():
    entry = _entry("{min_success: '75%'}")
    assert (entry["tasks_needed"], entry["tasks_done"], entry["tasks_total"]) == (3, 1, 4)


def test_join_all_shows_no_needed():
    entry = _entry("all")
    assert "tasks_needed" not in entry
    assert (entry["tasks_done"], entry["tasks_total"]) == (1, 4)
