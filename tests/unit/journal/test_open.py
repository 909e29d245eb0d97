"""Opening a journal: create, reopen, and refuse files that are not ours, broken or unreachable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.unit.journal.helpers import job, remount_read_only, sha256, submitted
from workflow_manager.errors import JournalError
from workflow_manager.journal import Batch, open_journal
from workflow_manager.journal.schema import APPLICATION_ID, SCHEMA_VERSION


def _header(path: Path) -> tuple[int, int, str]:
    conn = sqlite3.connect(path)
    try:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    finally:
        conn.close()
    return app_id, version, mode


async def _fill(path: Path, rows: int) -> None:
    journal = await open_journal(path)
    body = b'{"text": "' + b"lorem ipsum " * 20 + b'"}'
    for start in range(0, rows, 100):
        batch = Batch(events=[submitted(f"j{i}", body=body) for i in range(start, start + 100)])
        journal.append(batch)
    await journal.close()


async def test_creates_then_reopens_with_rows_kept(journal_path):
    journal = await open_journal(journal_path)
    await journal.append(Batch(events=[submitted("a")], jobs=[job("a")]))
    await journal.close()

    assert _header(journal_path) == (APPLICATION_ID, SCHEMA_VERSION, "wal")
    reopened = await open_journal(journal_path)
    try:
        assert [row.job_id for row in await reopened.events_of("a")] == ["a"]
        assert (await reopened.job("a")).status == "running"
    finally:
        await reopened.close()


async def test_reopens_a_journal_left_by_a_crash(tmp_path, journal_path):
    journal = await open_journal(journal_path)
    try:
        await journal.append(Batch(events=[submitted("a")], jobs=[job("a")]))
        # A copy taken while open is what a crash leaves: the rows are only in the -wal file.
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        for name in ("journal.db", "journal.db-wal"):
            (crashed / name).write_bytes((tmp_path / name).read_bytes())
    finally:
        await journal.close()

    recovered = await open_journal(crashed / "journal.db")
    try:
        assert await recovered.running_roots() == ["a"]
    finally:
        await recovered.close()


async def test_close_leaves_no_wal_behind(journal_path):
    journal = await open_journal(journal_path)
    await journal.append(Batch(events=[submitted("a")]))
    await journal.close()
    await journal.close()  # idempotent

    assert sorted(p.name for p in journal_path.parent.iterdir()) == ["journal.db"]


async def test_empty_file_is_initialised(journal_path):
    journal_path.write_bytes(b"")
    journal = await open_journal(journal_path)
    await journal.close()
    assert _header(journal_path)[:2] == (APPLICATION_ID, SCHEMA_VERSION)


async def test_empty_sqlite_database_is_initialised(journal_path):
    sqlite3.connect(journal_path).close()
    conn = sqlite3.connect(journal_path)
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    journal = await open_journal(journal_path)
    await journal.close()
    assert _header(journal_path)[:2] == (APPLICATION_ID, SCHEMA_VERSION)


async def test_normal_synchronous_is_accepted(journal_path):
    journal = await open_journal(journal_path, synchronous="normal")
    try:
        assert journal.synchronous == "NORMAL"
        await journal.append(Batch(events=[submitted("a")]))
    finally:
        await journal.close()


async def test_unknown_synchronous_mode_is_refused(journal_path):
    with pytest.raises(JournalError, match="FULL, NORMAL, not 'OFF'"):
        await open_journal(journal_path, synchronous="OFF")
    assert not journal_path.exists()


async def test_newer_schema_is_refused(journal_path):
    await (await open_journal(journal_path)).close()
    conn = sqlite3.connect(journal_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(JournalError, match="newer workflow-manager") as caught:
        await open_journal(journal_path)
    assert str(journal_path) in str(caught.value)


async def test_garbage_over_the_middle_is_reported_as_corrupted(journal_path):
    await _fill(journal_path, 2_000)
    size = journal_path.stat().st_size
    assert size > 200_000
    with journal_path.open("r+b") as file:
        file.seek(size // 2)
        file.write(bytes(range(256)) * 64)

    with pytest.raises(JournalError, match="corrupted") as caught:
        await open_journal(journal_path)
    assert str(journal_path) in str(caught.value)
    assert "restore a backup" in str(caught.value)


async def test_truncated_journal_is_reported_as_corrupted(journal_path):
    await _fill(journal_path, 2_000)
    with journal_path.open("r+b") as file:
        file.truncate(journal_path.stat().st_size // 2)

    with pytest.raises(JournalError, match="corrupted") as caught:
        await open_journal(journal_path)
    assert str(journal_path) in str(caught.value)


async def test_journal_cut_inside_its_header_is_not_a_database(journal_path):
    await _fill(journal_path, 10)
    with journal_path.open("r+b") as file:
        file.truncate(50)

    with pytest.raises(JournalError, match="is not a SQLite database"):
        await open_journal(journal_path)


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
async def test_foreign_database_is_refused_and_left_untouched(tmp_path, journal_mode):
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal_mode}")
    conn.executescript(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY);"
        "INSERT INTO customers (name) VALUES ('Ada');"
    )
    conn.close()
    before = sha256(path)

    with pytest.raises(JournalError) as caught:
        await open_journal(path)

    message = str(caught.value)
    assert f"{path} is not a workflow-manager journal: it holds tables customers, orders" in message
    assert sha256(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shop.db"]


async def test_foreign_application_id_without_tables_is_refused(journal_path):
    conn = sqlite3.connect(journal_path)
    conn.execute("PRAGMA application_id = 1234")
    conn.close()
    before = sha256(journal_path)
    with pytest.raises(JournalError, match="application_id is 0x4d2"):
        await open_journal(journal_path)
    assert sha256(journal_path) == before


async def test_garbage_file_is_not_a_database(journal_path):
    journal_path.write_bytes(b"these are not the bytes you are looking for\n" * 100)
    with pytest.raises(JournalError) as caught:
        await open_journal(journal_path)
    assert str(caught.value).startswith(
        f"{journal_path} is not a SQLite database (or is corrupted)"
    )


async def test_missing_directory_is_named(tmp_path):
    path = tmp_path / "no" / "such" / "journal.db"
    with pytest.raises(JournalError) as caught:
        await open_journal(path)
    assert str(caught.value).startswith(f"cannot create the journal at {path}: directory ")
    assert "does not exist" in str(caught.value)


async def test_directory_path_is_refused(tmp_path):
    with pytest.raises(JournalError, match="it is a directory") as caught:
        await open_journal(tmp_path)
    assert str(tmp_path) in str(caught.value)


async def test_read_only_directory_is_named(tmpfs):
    path = tmpfs("100k", ro=True) / "journal.db"
    with pytest.raises(JournalError) as caught:
        await open_journal(path)
    assert str(caught.value) == (
        f"cannot create the journal at {path}: directory {path.parent} is not writable"
    )


async def test_read_only_journal_is_named(tmpfs):
    path = tmpfs("1m") / "journal.db"
    await (await open_journal(path)).close()
    remount_read_only(path.parent)
    with pytest.raises(JournalError) as caught:
        await open_journal(path)
    assert str(caught.value) == f"cannot open the journal at {path}: the file is not writable"


async def test_closed_journal_refuses_appends_and_reads(journal_path):
    journal = await open_journal(journal_path)
    await journal.close()

    future = journal.append(Batch(events=[submitted("a")]))
    assert future.done()
    with pytest.raises(JournalError, match="is closed"):
        await future
    with pytest.raises(JournalError, match="is closed"):
        await journal.running_roots()
    with pytest.raises(JournalError, match="is closed"):
        await journal.delete_finished(0.0)
