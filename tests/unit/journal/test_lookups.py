"""A job's row looked up on the event loop (`SqliteJournal.job`), and the file's check started
ahead of opening (`checkahead`)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.unit.journal.helpers import T0, dispatched, job, submitted
from workflow_manager.errors import JournalError
from workflow_manager.journal import Batch, EventKind, EventRow, open_journal
from workflow_manager.journal.checkahead import check_ahead, checked_ahead


async def test_a_job_row_is_found_on_the_loop_and_a_missing_one_is_none(journal_path):
    journal = await open_journal(journal_path)
    try:
        await journal.append(Batch(events=[submitted("a")], jobs=[job("a", status="completed")]))
        found = await journal.job("a")
        assert found is not None and found.id == "a" and found.status == "completed"
        assert await journal.job("b") is None
    finally:
        await journal.close()


async def test_a_job_id_with_a_nul_finds_the_row_written_for_it(journal_path):
    journal = await open_journal(journal_path)
    try:
        await journal.append(Batch(events=[submitted("x\x00y")], jobs=[job("x\x00y")]))
        found = await journal.job("x\x00y")
        assert found is not None and found.id == "x\ufffdy"
    finally:
        await journal.close()


class _Busy:
    """Stands in for the lookup connection: every statement finds the file locked."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.calls = 0

    def execute(self, *_args: Any) -> Any:
        self.calls += 1
        error = sqlite3.OperationalError("database is locked")
        error.sqlite_errorcode = self.code  # type: ignore[attr-defined]
        raise error

    def close(self) -> None:
        pass


async def test_a_lookup_that_would_wait_for_a_lock_goes_to_the_reading_thread(journal_path):
    journal = await open_journal(journal_path)
    try:
        await journal.append(Batch(events=[submitted("a")], jobs=[job("a")]))
        busy = _Busy(sqlite3.SQLITE_BUSY)
        journal._lookups = busy  # type: ignore[attr-defined]
        found = await journal.job("a")
        assert busy.calls == 1
        assert found is not None and found.id == "a"
    finally:
        await journal.close()


async def test_any_other_lookup_failure_is_a_journal_error_naming_the_file(journal_path):
    journal = await open_journal(journal_path)
    try:
        journal._lookups = _Busy(sqlite3.SQLITE_IOERR)  # type: ignore[attr-defined]
        with pytest.raises(JournalError) as caught:
            await journal.job("a")
        assert str(journal_path) in str(caught.value)
        assert "job a" in str(caught.value)
    finally:
        await journal.close()


async def test_a_closed_journal_refuses_the_lookup(journal_path):
    journal = await open_journal(journal_path)
    await journal.close()
    with pytest.raises(JournalError, match="closed"):
        await journal.job("a")


async def test_a_check_started_ahead_is_taken_by_the_open_once(journal_path):
    await (await open_journal(journal_path)).close()  # a journal to check
    check_ahead(journal_path)
    journal = await open_journal(journal_path)
    await journal.close()
    assert checked_ahead(journal_path) is None  # the open took it


async def test_a_check_started_ahead_reports_a_corrupted_file_at_the_open(journal_path):
    journal = await open_journal(journal_path)
    for start in range(0, 2_000, 100):
        journal.append(Batch(events=[submitted(f"j{i}") for i in range(start, start + 100)]))
    await journal.close()
    size = journal_path.stat().st_size
    with journal_path.open("r+b") as file:
        file.seek(size // 2)
        file.write(bytes(range(256)) * 64)

    check_ahead(journal_path)
    with pytest.raises(JournalError, match="corrupted") as caught:
        await open_journal(journal_path)
    assert str(journal_path) in str(caught.value)
    assert checked_ahead(journal_path) is None



async def test_a_jobs_tree_is_found_from_its_row_or_from_the_latest_row_filed_under_it(
    journal_path,
):
    stray = EventRow(kind=EventKind.IGNORED, job_id="stray", root_id=None, at=T0)
    journal = await open_journal(journal_path)
    try:
        await journal.append(
            Batch(
                # A running child has no job row until it ends; a stray row names no tree.
                events=[submitted("root"), dispatched("child", "m1", root_id="root"), stray],
                jobs=[job("root")],
            )
        )
        assert await journal.tree_of("root") == ("root", None)
        assert await journal.tree_of("child") == ("root", None)
        assert await journal.tree_of("stray") is None
        assert await journal.tree_of("nobody") is None
    finally:
        await journal.close()
