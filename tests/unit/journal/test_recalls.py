"""The ended jobs recovery recalls (a leading debounce's window outlives its job): read on
SQLite and PostgreSQL alike."""

from __future__ import annotations

from tests.unit.journal.helpers import T0, job
from workflow_manager.journal import Batch, Journal


async def test_ended_top_level_jobs_of_the_workflow_submitted_since_oldest_first(
    journal: Journal,
) -> None:
    rows = [
        job("late", status="completed", submitted_at=T0 + 5, finished_at=T0 + 6,
            payload={"order": 2}, snapshot={"meta": {"tenant": "t"}}),
        job("early", status="failed", submitted_at=T0 + 1, finished_at=T0 + 2,
            payload={"order": 1}),
        job("too-old", status="completed", submitted_at=T0 - 1, finished_at=T0),
        job("running", submitted_at=T0 + 3),
        job("other", workflow="other", status="completed", submitted_at=T0 + 3,
            finished_at=T0 + 4),
        job("child", parent_id="early", root_id="early", status="completed",
            submitted_at=T0 + 3, finished_at=T0 + 4),
    ]  # fmt: skip
    await journal.append(Batch(jobs=rows))
    found = await journal.ended_since("wc", T0)
    assert [(j.id, j.payload, j.meta, j.submitted_at) for j in found] == [
        ("early", {"order": 1}, None, T0 + 1),
        ("late", {"order": 2}, {"tenant": "t"}, T0 + 5),
    ]
