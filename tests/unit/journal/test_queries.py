"""Reads: replay rows, running jobs, a workflow's jobs, a job's rows, definitions, index use."""

from __future__ import annotations

import sqlite3

import pytest

from tests.unit.journal.helpers import T0, dispatched, event, job, replied, submitted
from workflow_manager.journal import Batch, EventRow
from workflow_manager.journal.queries import IN_CHUNK


async def test_replay_rows_keeps_replayed_kinds_of_the_given_trees_in_seq_order(journal):
    await journal.append(
        Batch(
            events=[
                submitted("r1"),
                submitted("r2"),
                dispatched("r1", "m1"),
                replied("r2"),
                submitted("c1", root_id="r1"),  # a child job of r1
                event("started", "r1"),
                replied("c1", root_id="r1"),
                replied("r3"),
                event("ignored", None, meta={"reason": "unknown job"}),
                replied("r1"),
            ]
        )
    )

    rows = await journal.replay_rows(["r1", "r2", "r1"])

    assert [(row.seq, row.kind, row.job_id) for row in rows] == [
        (1, "submitted", "r1"),
        (2, "submitted", "r2"),
        (4, "replied", "r2"),
        (5, "submitted", "c1"),
        (7, "replied", "c1"),
        (10, "replied", "r1"),
    ]
    assert await journal.replay_rows([]) == []


async def test_schedule_rows_are_each_schedules_latest_row_and_latest_row_its_last(journal):
    def row(kind: str, job_id: str, **meta: object) -> EventRow:
        return EventRow(at=T0, kind=kind, job_id=job_id, meta=meta)

    await journal.append(
        Batch(
            events=[
                row("schedule", "schedule:w/a", paused=True),
                row("schedule", "schedule:w/b", paused=True),
                row("fired", "schedule:w/a:fired", job="j1"),
                row("schedule", "schedule:w/a", paused=False),
                row("fired", "schedule:w/a:fired", job="j2"),
                submitted("r1"),
            ]
        )
    )

    rows = await journal.schedule_rows(["schedule:w/a", "schedule:w/b", "schedule:w/c"])

    assert [(r.seq, r.job_id, r.meta) for r in rows] == [
        (2, "schedule:w/b", {"paused": True}),
        (4, "schedule:w/a", {"paused": False}),
    ]
    latest = await journal.latest_row("schedule:w/a:fired")
    assert latest is not None and latest.meta == {"job": "j2"}
    assert await journal.latest_row("schedule:w/b:fired") is None


async def test_replay_rows_spans_several_id_chunks(journal):
    roots = [f"root{i:05d}" for i in range(IN_CHUNK * 2 + 7)]
    # Interleave the trees so seq order differs from root order.
    for step in range(3):
        await journal.append(
            Batch(events=[replied(root, at=T0 + step) for root in reversed(roots)])
        )

    rows = await journal.replay_rows(roots[::2])

    assert len(rows) == 3 * len(roots[::2])
    assert [row.seq for row in rows] == sorted(row.seq for row in rows)
    assert {row.root_id for row in rows} == set(roots[::2])


async def test_running_roots_are_top_level_jobs_oldest_first(journal):
    await journal.append(
        Batch(
            jobs=[
                job("r2", submitted_at=T0 + 2),
                job("r1", submitted_at=T0 + 1),
                job("c1", parent_id="r1", submitted_at=T0 + 3),
                job("done", status="completed", finished_at=T0 + 4),
                job("later", status="scheduled", submitted_at=T0 + 5),
            ]
        )
    )

    assert await journal.running_roots() == ["r1", "r2", "later"]


async def test_workflow_jobs_buckets_top_level_jobs_finished_since(journal):
    rows = [
        job("old", status="completed", submitted_at=T0, finished_at=T0 + 1),
        job("run2", submitted_at=T0 + 20),
        job("ok", status="completed", submitted_at=T0 + 11, finished_at=T0 + 12),
        job("bad", status="failed", submitted_at=T0 + 13, finished_at=T0 + 14),
        job("stop", status="cancelled", submitted_at=T0 + 15, finished_at=T0 + 10),
        job("run1", submitted_at=T0 + 5),
        job("child", parent_id="run1", submitted_at=T0 + 6),
        job("other", workflow="other", submitted_at=T0 + 7),
    ]
    await journal.append(Batch(jobs=rows))

    assert await journal.workflow_jobs("wc", finished_since=T0 + 10) == {
        "running": ["run1", "run2"],
        "queued": [],
        "completed": ["ok"],
        "failed": ["bad"],
        "cancelled": ["stop"],
    }
    assert (await journal.workflow_jobs("wc", finished_since=0.0))["completed"] == ["old", "ok"]
    assert await journal.workflow_jobs("nope", finished_since=0.0) == {
        "running": [],
        "queued": [],
        "completed": [],
        "failed": [],
        "cancelled": [],
    }


async def test_events_of_a_job_and_of_its_tree(journal):
    await journal.append(
        Batch(
            events=[
                submitted("r"),
                submitted("c1", root_id="r"),
                submitted("g1", root_id="r"),
                submitted("c2", root_id="r"),
                replied("g1", root_id="r"),
                submitted("x"),
            ],
            jobs=[
                job("r"),
                job("c1", root_id="r", parent_id="r"),
                job("g1", root_id="r", parent_id="c1"),
                job("c2", root_id="r", parent_id="r"),
            ],
        )
    )

    assert [row.seq for row in await journal.events_of("g1")] == [3, 5]
    assert [row.seq for row in await journal.events_of("r", tree=True)] == [1, 2, 3, 4, 5]
    assert [row.job_id for row in await journal.events_of("c1", tree=True)] == ["c1", "g1", "g1"]
    assert await journal.events_of("unknown", tree=True) == []


async def test_definitions_are_saved_once_and_read_by_hash(journal):
    await journal.save_definitions([("h1", "wc", '{"v": 1}'), ("h2", "wc", '{"v": 2}')])
    await journal.save_definitions([("h1", "wc", '{"v": "changed"}')])
    await journal.save_definitions([])

    assert await journal.definitions() == {"h1": ("wc", '{"v": 1}'), "h2": ("wc", '{"v": 2}')}
    assert await journal.definitions(["h2", "h9"]) == {"h2": ("wc", '{"v": 2}')}
    assert await journal.definitions([]) == {}


@pytest.mark.parametrize(
    ("query", "index"),
    [
        (
            "SELECT * FROM events WHERE root_id IN (?, ?) AND kind IN ('submitted', 'replied')",
            "events_root",
        ),
        (
            "SELECT * FROM events WHERE sent_at IS NULL AND msg_id IS NOT NULL ORDER BY seq",
            "events_pending",
        ),
        ("UPDATE events SET sent_at = ? WHERE msg_id = ? AND sent_at IS NULL", "events_msg"),
        ("SELECT * FROM events WHERE job_id = ? ORDER BY seq", "events_job"),
        (
            "SELECT id FROM jobs WHERE status = 'running' AND parent_id IS NULL"
            " ORDER BY submitted_at, id",
            "jobs_running",
        ),
        (
            "SELECT id FROM jobs WHERE parent_id IS NULL AND finished_at IS NULL"
            " ORDER BY submitted_at, id",
            "jobs_roots_finished",
        ),
        (
            "SELECT id, status FROM jobs WHERE workflow = ? AND parent_id IS NULL"
            " AND (status = 'running' OR finished_at >= ?) ORDER BY submitted_at, id",
            "jobs_workflow",
        ),
        ("SELECT id FROM jobs WHERE root_id = ?", "jobs_root"),
        ("SELECT seq FROM events WHERE job_id = ? ORDER BY seq DESC LIMIT 1", "events_job"),
        (
            "SELECT id FROM jobs WHERE parent_id IS NULL AND finished_at < ?"
            " AND status != 'running' ORDER BY finished_at LIMIT ?",
            "jobs_roots_finished",
        ),
    ],
)
async def test_queries_use_their_index(sqlite_journal, journal_path, query, index):
    await sqlite_journal.flush()
    conn = sqlite3.connect(journal_path)
    try:
        plan = " | ".join(
            row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", (1,) * query.count("?"))
        )
    finally:
        conn.close()
    assert f"INDEX {index}" in plan, plan
