"""Retention of stored payload values: a job's values go once its top-level job ended long
enough ago, or the journal no longer knows it; never while a job in memory refers to them."""

from __future__ import annotations

from types import SimpleNamespace

from payload_refs import MemoryStore
from workflow_manager.journal import JobRow
from workflow_manager.payloads.retention import PayloadRetention

ROOT, CHILD, RUNNING, UNKNOWN = "root", "child", "running", "unknown"
_MEMORY = SimpleNamespace(jobs={})  # no job in memory refers to a value


class _Journal:
    """The one read retention makes: a job's row."""

    def __init__(self, rows: list[JobRow]) -> None:
        self.rows = {row.id: row for row in rows}

    async def job(self, job_id: str) -> JobRow | None:
        return self.rows.get(job_id)


def _row(job_id: str, root: str, finished_at: float | None) -> JobRow:
    return JobRow(
        job_id, root, None if job_id == root else root, "w", "", "main",
        "running" if finished_at is None else "completed", 0.0, finished_at, {},
    )  # fmt: skip


async def _store() -> MemoryStore:
    store = MemoryStore("main")
    for job in (ROOT, CHILD, RUNNING, UNKNOWN):
        await store.put(job, f'"{job}"'.encode())
        store.stored_at[next(k for k in store.values if k.startswith(f"{job}/"))] = 100.0
    return store


async def test_values_of_ended_trees_and_unknown_jobs_go_and_running_ones_stay():
    store = await _store()
    journal = _Journal(
        [_row(ROOT, ROOT, 200.0), _row(CHILD, ROOT, None), _row(RUNNING, RUNNING, None)]
    )
    retention = PayloadRetention(store, journal, lambda: _MEMORY, lambda: 1000.0, 500.0, 60.0)  # type: ignore[arg-type]
    assert await retention.sweep() == 3
    assert {key.split("/")[0] for key in store.values} == {RUNNING}


async def test_a_tree_that_ended_within_the_retention_period_keeps_its_values():
    store = await _store()
    journal = _Journal([_row(ROOT, ROOT, 800.0), _row(CHILD, ROOT, 800.0)])
    retention = PayloadRetention(store, journal, lambda: _MEMORY, lambda: 1000.0, 500.0, 60.0)  # type: ignore[arg-type]
    await retention.sweep()
    assert {key.split("/")[0] for key in store.values} == {ROOT, CHILD}


async def test_values_stored_within_the_retention_period_stay_whatever_the_journal_says():
    store = await _store()
    retention = PayloadRetention(store, _Journal([]), lambda: _MEMORY, lambda: 550.0, 500.0, 60.0)  # type: ignore[arg-type]
    assert await retention.sweep() == 0
    assert len(store.values) == 4
