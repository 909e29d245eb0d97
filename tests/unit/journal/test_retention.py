"""Retention: finished trees go whole, running and recent ones stay, appends are not disturbed."""

from __future__ import annotations

import asyncio

from tests.unit.journal.helpers import T0, dispatched, event, job, replied, submitted
from workflow_manager.journal import Batch, EventKind, EventRow
from workflow_manager.journal.retention import TREES_PER_TRANSACTION


def _tree(root: str, status: str, finished_at: float | None) -> Batch:
    """A top-level job with a child and a grandchild, each with rows."""
    child, grandchild = f"{root}.c", f"{root}.c.g"
    return Batch(
        events=[
            submitted(root),
            submitted(child, root_id=root),
            replied(grandchild, root_id=root),
            event("finished", root),
        ],
        jobs=[
            job(root, status=status, finished_at=finished_at),
            job(child, root_id=root, parent_id=root, status=status, finished_at=finished_at),
            job(grandchild, root_id=root, parent_id=child, status=status, finished_at=finished_at),
        ],
    )


async def test_finished_trees_go_with_their_descendants_and_rows(journal):
    await journal.append(_tree("old", "completed", T0 + 1))
    await journal.append(_tree("failed", "failed", T0 + 2))
    await journal.append(_tree("recent", "completed", T0 + 100))
    await journal.append(_tree("running", "running", None))

    assert await journal.delete_finished(before=T0 + 50) == 2

    for gone in ("old", "old.c", "old.c.g", "failed", "failed.c.g"):
        assert await journal.job(gone) is None
        assert await journal.events_of(gone) == []
    for kept in ("recent", "recent.c.g", "running", "running.c", "running.c.g"):
        assert await journal.job(kept) is not None
        assert await journal.events_of(kept) != []
    assert await journal.delete_finished(before=T0 + 50) == 0


async def test_limit_spans_several_transactions(journal):
    trees = TREES_PER_TRANSACTION * 2 + 10
    for i in range(trees):
        journal.append(_tree(f"t{i:04d}", "completed", T0 + i))
    await journal.flush()

    assert await journal.delete_finished(before=T0 + 10_000, limit=trees - 3) == trees - 3
    assert await journal.delete_finished(before=T0 + 10_000) == 3
    assert await journal.workflow_jobs("wc", finished_since=0.0) == {
        "running": [],
        "queued": [],
        "completed": [],
        "failed": [],
        "cancelled": [],
    }


async def test_a_tree_with_an_unsent_notice_is_kept_until_sent(journal):
    await journal.append(_tree("a", "completed", T0 + 1))
    await journal.append(Batch(events=[event("notified", "a", msg_id="n1")]))

    assert await journal.delete_finished(before=T0 + 50) == 0
    await journal.append(Batch(sent=[("n1", T0 + 60)]))
    assert await journal.delete_finished(before=T0 + 50) == 1


async def test_old_rows_outside_any_tree_go_by_age_unless_pending(journal):
    await journal.append(
        Batch(
            events=[
                event("ignored", None, at=T0, meta={"reason": "unknown job"}),
                event("ignored", None, at=T0 + 100),
                dispatched(None, "m-orphan", at=T0),
            ]
        )
    )

    await journal.delete_finished(before=T0 + 50)

    rows = await journal.pending_outbound()
    assert [row.msg_id for row in rows] == ["m-orphan"]
    await journal.append(Batch(sent=[("m-orphan", T0 + 1)]))
    await journal.delete_finished(before=T0 + 50)
    assert await journal.pending_outbound() == []


async def test_a_schedules_latest_fired_row_stays_however_old(journal):
    # The job a schedule last started is its status (GET /api/schedules), after a restart too.
    fired = "schedule:nightly/run:fired"
    rows = [
        EventRow(at=T0 + n, kind=EventKind.FIRED, job_id=fired, meta={"job": f"job-{n}"})
        for n in range(3)
    ]
    await journal.append(Batch(events=rows))

    await journal.delete_finished(before=T0 + 100)

    assert [row.meta["job"] for row in await journal.events_of(fired)] == ["job-2"]


async def test_appends_made_during_retention_are_all_committed(journal):
    for i in range(TREES_PER_TRANSACTION * 3):
        journal.append(_tree(f"t{i:04d}", "completed", T0 + i))
    await journal.flush()

    async def keep_appending() -> None:
        for i in range(200):
            await journal.append(Batch(events=[replied("live", at=T0 + i)], jobs=[job("live")]))

    deleted, _ = await asyncio.gather(journal.delete_finished(before=T0 + 10_000), keep_appending())

    assert deleted == TREES_PER_TRANSACTION * 3
    assert len(await journal.events_of("live")) == 200
    assert await journal.running_roots() == ["live"]


def _bulk(key: str, finished: bool, at: float) -> Batch:
    """A bulk action's rows: asked for, and one slice (the last one when `finished`)."""
    return Batch(
        events=[
            event("bulk", key, body=b'["j1", "j2"]', meta={"id": key, "action": "cancel"}),
            event("bulk-step", key, at=at, meta={"id": key, "done": 2, "finished": finished}),
        ]
    )


async def test_bulk_actions_go_once_finished_before_the_cutoff(journal):
    await journal.append(_bulk("bulk:old", True, T0 + 1))
    await journal.append(_bulk("bulk:recent", True, T0 + 100))
    await journal.append(_bulk("bulk:under-way", False, T0 + 1))

    await journal.delete_finished(before=T0 + 50)

    assert await journal.events_of("bulk:old") == []
    assert len(await journal.events_of("bulk:recent")) == 2
    assert len(await journal.events_of("bulk:under-way")) == 2
    assert await journal.bulks_under_way() == ["bulk:under-way"]
