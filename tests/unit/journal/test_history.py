"""Reads for browsing jobs, on both journals: a parent's children, the latest jobs with their
filters (an id prefix too), and what finished lately."""

from __future__ import annotations

from tests.unit.journal.helpers import T0, job
from workflow_manager.journal import Batch
from workflow_manager.journal.history import ChildRow

A = "3f2a0c4e-0000-4000-8000-000000000001"
B = "3f2b0000-0000-4000-8000-000000000002"
C = "9e000000-0000-4000-8000-000000000003"


async def _jobs(journal) -> None:
    await journal.append(
        Batch(
            jobs=[
                job(A, status="completed", submitted_at=T0 + 1, finished_at=T0 + 4),
                job(B, status="failed", submitted_at=T0 + 2, finished_at=T0 + 9,
                    error={"message": "boom"}),
                job(C, workflow="other", submitted_at=T0 + 3),
                job("c1", root_id=A, parent_id=A, status="completed", submitted_at=T0 + 2,
                    finished_at=T0 + 3),
                job("c2", root_id=A, parent_id=A, status="failed", submitted_at=T0 + 2,
                    finished_at=T0 + 3, error={"message": "bad item"}),
            ]
        )
    )  # fmt: skip


async def test_children_of_a_parent(journal):
    await _jobs(journal)

    children = await journal.children(A)

    assert children == {
        "c1": ChildRow("c1", "wc", "completed", T0 + 2, T0 + 3, None),
        "c2": ChildRow("c2", "wc", "failed", T0 + 2, T0 + 3, {"message": "bad item"}),
    }
    assert await journal.children(C) == {}


async def test_recent_jobs_newest_first_with_each_filter(journal):
    await _jobs(journal)

    assert [j.id for j in await journal.recent_jobs()] == [C, B, A]
    assert [j.id for j in await journal.recent_jobs(workflow="wc")] == [B, A]
    assert [j.id for j in await journal.recent_jobs(status="failed")] == [B]
    assert [j.id for j in await journal.recent_jobs(id_prefix="3f2")] == [B, A]
    assert [j.id for j in await journal.recent_jobs(id_prefix="3f2a")] == [A]
    assert [j.id for j in await journal.recent_jobs(before=T0 + 3)] == [B, A]
    assert [j.id for j in await journal.recent_jobs(limit=1)] == [C]


async def test_finished_since_gives_each_top_level_jobs_run_time(journal):
    await _jobs(journal)

    assert sorted(await journal.finished_since(T0 + 5)) == [("wc", "failed", 7.0)]
    assert sorted(await journal.finished_since(0.0)) == [
        ("wc", "completed", 3.0),
        ("wc", "failed", 7.0),
    ]


async def test_running_jobs_are_the_running_top_level_ones_oldest_first(journal):
    await _jobs(journal)
    D = "9e000000-0000-4000-8000-000000000004"
    await journal.append(
        Batch(
            jobs=[
                job(D, workflow="wd", submitted_at=T0 + 0.5),
                job("q", status="queued", submitted_at=T0),  # waits: not running
                job("c3", root_id=C, parent_id=C, submitted_at=T0 + 4),  # a child
            ]
        )
    )

    running = await journal.running_jobs()

    assert [(j.id, j.workflow, j.status) for j in running] == [
        (D, "wd", "running"),
        (C, "other", "running"),
    ]
