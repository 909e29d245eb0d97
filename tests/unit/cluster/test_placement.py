"""Placing a partitioned manager's new jobs: by key, by id, or where a named job already is."""

from __future__ import annotations

import dataclasses

from tests.pgdatabase import fresh_database
from tests.unit.engine.helpers import JOB, OTHER_JOB, workflows
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.cluster.placement import Placement
from workflow_manager.engine import EngineState, JobSubmitted, StepReplied, TimerFired, apply
from workflow_manager.engine.placement import placement_key
from workflow_manager.journal import JobRow, open_journal
from workflow_manager.recorder import record

FLOW = """
workflows:
  - name: per-account
    concurrency: {limit: 1, key: account}
    steps: [{name: s}]
  - name: plain
    steps: [{name: s}]
  - name: gated
    concurrency: {limit: 9, key: account}
    steps:
      - {name: s}
      - {name: each, task: gate, depends: [s]}
    tasks:
      - name: gate
        itemListKey: items
        steps: [{name: approve, wait: true}]
"""
SPLIT = Partitioning("wm", 6)


class _Journal:
    """The reads placement makes, from a dict of job rows."""

    def __init__(self, rows: dict[str, JobRow]) -> None:
        self.rows = rows

    async def tree_of(self, job_id: str) -> tuple[str, int | None] | None:
        row = self.rows.get(job_id)
        return None if row is None else (row.root_id, row.partition)

    async def placements(self, roots) -> dict[str, int]:
        found = {r: self.rows[r].partition for r in roots if r in self.rows}
        return {r: p for r, p in found.items() if p is not None}


def _placement(state: EngineState, rows: dict[str, JobRow] | None = None) -> Placement:
    return Placement(SPLIT, _Journal(rows or {}), lambda: state, {})  # type: ignore[arg-type]


async def test_a_new_job_goes_to_its_keys_partition_whatever_its_id() -> None:
    placement = _placement(EngineState.from_workflows(workflows(FLOW)))
    key = placement_key(workflows(FLOW)["per-account"], {"account": "a"}, None)
    for job_id in (JOB, OTHER_JOB):
        event = JobSubmitted(job_id, "per-account", {"account": "a"}, 1.0)
        placed, new = await placement.place(event, named=True)
        assert placed.partition == SPLIT.place(key, job_id)
        assert new  # named, and no job has that id: nothing ended to answer for
    plain = JobSubmitted(JOB, "plain", {}, 1.0)
    assert await placement.place(plain, named=False) == (
        dataclasses.replace(plain, partition=SPLIT.of(JOB)),
        False,  # not looked up
    )
    bad = JobSubmitted("not-a-uuid", "plain", {}, 1.0)
    assert await placement.place(bad, named=True) == (bad, False)  # rejected anywhere


async def test_a_named_id_of_an_existing_job_goes_where_that_job_is() -> None:
    state = EngineState.from_workflows(workflows(FLOW))
    apply(state, JobSubmitted(JOB, "per-account", {"account": "a"}, 1.0, partition=5))
    row = JobRow(OTHER_JOB, OTHER_JOB, None, "per-account", "h", "per-account", "completed",
                 1.0, 2.0, {}, partition=1)  # fmt: skip
    placement = _placement(state, {OTHER_JOB: row})
    # Another account's payload: the id names a job already, and the trigger goes to it.
    for job_id, partition in [(JOB, 5), (OTHER_JOB, 1)]:
        again = JobSubmitted(job_id, "per-account", {"account": "b"}, 3.0)
        placed, new = await placement.place(again, named=True)
        assert placed.partition == partition and not new
        assert await placement.partition_of(job_id) == partition
    assert await placement.select([JOB, OTHER_JOB, "x"], {1, SPLIT.of("x")}) == [OTHER_JOB, "x"]


async def test_another_manager_finds_a_waiting_childs_tree_from_the_journal() -> None:
    # The owner runs a job placed by its key; its children wait at once, so each has journaled
    # only the row of its waiting step. A manager with none of it in memory places them.
    with fresh_database() as url:
        journal = await open_journal(url)
        try:
            await _place_waiting_children(journal)
        finally:
            await journal.close()


async def _place_waiting_children(journal) -> None:
    owner = EngineState.from_workflows(workflows(FLOW))
    key = placement_key(workflows(FLOW)["gated"], {"account": "a"}, None)
    for event in (
        JobSubmitted(JOB, "gated", {"account": "a"}, 1.0, partition=SPLIT.place(key, JOB)),
        TimerFired(f"admit:{JOB}", 1.5),  # a keyed job is admitted under its limit
        StepReplied(JOB, "s", b'{"items": [1, 2]}', 2.0, attempt=1),
    ):
        await journal.append(record(event, apply(owner, event)[1], "wm").batch)
    children = owner.jobs[JOB].steps["each"].children
    other = Placement(SPLIT, journal, lambda: EngineState.from_workflows(workflows(FLOW)), {})
    assert SPLIT.place(key, JOB) != SPLIT.of(JOB)  # else the test proves nothing
    for child in children:
        assert (await other.tree_of(child))[0] == JOB  # type: ignore[index]
        assert await other.partition_of(child) == SPLIT.place(key, JOB)
    # The journal's one read: the root's own row, a child's latest row, no row at all.
    assert await journal.tree_of(JOB) == (JOB, SPLIT.place(key, JOB))
    assert await journal.tree_of(children[0]) == (JOB, SPLIT.place(key, JOB))
    assert await journal.tree_of(OTHER_JOB) is None
