"""Opening a PostgreSQL journal: create, reopen, migrate; refuse databases that are not ours,
newer ones, bad URLs and unreachable servers with one line that never shows the password."""

from __future__ import annotations

import re
import subprocess
import sys

import psycopg
import pytest

from tests.pgdatabase import skip_without_postgres
from tests.unit.journal.helpers import T0, dispatched, job, submitted
from workflow_manager.errors import JournalError
from workflow_manager.journal import Batch, open_journal
from workflow_manager.journal.postgres.reads import pg_sql
from workflow_manager.journal.postgres.schema import SCHEMA_VERSION
from workflow_manager.journal.statements import MARK_SENT


def _execute(url: str, *statements: str) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows: list[tuple] = []
        for statement in statements:
            cursor = conn.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
        return rows


async def test_creates_then_reopens_with_rows_kept(pg_url):
    journal = await open_journal(pg_url)
    await journal.append(Batch(events=[submitted("a")], jobs=[job("a")]))
    await journal.close()

    assert _execute(pg_url, "SELECT version FROM workflow_manager_schema") == [(SCHEMA_VERSION,)]
    reopened = await open_journal(pg_url)
    try:
        assert [row.job_id for row in await reopened.events_of("a")] == ["a"]
        assert (await reopened.job("a")).status == "running"
    finally:
        await reopened.close()


async def test_a_journal_in_a_schema_of_its_own(pg_url):
    _execute(pg_url, "CREATE SCHEMA wm", "CREATE TABLE public.other (x int)")
    journal = await open_journal(f"{pg_url}?options=-csearch_path%3Dwm")
    await journal.append(Batch(events=[submitted("a")]))
    await journal.close()

    assert _execute(pg_url, "SELECT count(*) FROM wm.events") == [(1,)]


async def test_a_database_with_other_tables_is_refused_and_left_untouched(pg_url):
    _execute(pg_url, "CREATE TABLE orders (id int)", "CREATE TABLE events (x int)")

    with pytest.raises(
        JournalError,
        match=r"is not a workflow-manager journal: .*tables events, orders \(left untouched",
    ):
        await open_journal(pg_url)
    tables = _execute(pg_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    assert sorted(tables) == [("events",), ("orders",)]


async def test_a_newer_schema_is_refused(pg_url):
    await (await open_journal(pg_url)).close()
    _execute(pg_url, f"UPDATE workflow_manager_schema SET version = {SCHEMA_VERSION + 1}")

    with pytest.raises(JournalError, match=r"written by a newer workflow-manager .*upgrade"):
        await open_journal(pg_url)


async def test_an_older_schema_is_migrated(pg_url, monkeypatch):
    from workflow_manager.journal.postgres import schema

    await (await open_journal(pg_url)).close()
    step = "ALTER TABLE jobs ADD COLUMN note text"
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, step))
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)

    await (await open_journal(pg_url)).close()

    assert _execute(pg_url, "SELECT version FROM workflow_manager_schema") == [
        (SCHEMA_VERSION + 1,)
    ]
    assert _execute(pg_url, "SELECT count(note) FROM jobs") == [(0,)]


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("postgresql://postgres@127.0.0.1:1/wm", r"Connection refused.*is PostgreSQL running"),
        ("postgresql://postgres:s3cret@127.0.0.1:1/wm", r"Connection refused"),
        ("postgresql://postgres@127.0.0.1:x/wm", r"invalid integer value"),
        ("postgresql://postgres@127.0.0.1/wm_no_such_db", r"does not exist.*createdb"),
        ("postgresql://no_such_role@127.0.0.1/postgres", r"role .* does not exist.*user"),
        ("postgresql://postgres@127.0.0.1/wm?sslmode=bogus", r"invalid sslmode"),
    ],
)
async def test_a_database_that_cannot_be_used_is_one_line_without_the_password(url, words):
    skip_without_postgres()
    with pytest.raises(JournalError) as caught:
        await open_journal(url)
    message = str(caught.value)
    assert "\n" not in message
    assert "s3cret" not in message
    assert message.startswith("cannot open the journal at postgresql://"), message
    assert re.search(words, message), message


def test_a_manager_on_sqlite_never_loads_psycopg():
    code = (
        "import sys, workflow_manager.server, workflow_manager.journal; "
        "print('psycopg' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


async def test_sent_marks_find_their_row_through_the_unsent_index(pg_url):
    journal = await open_journal(pg_url)
    await journal.append(Batch(events=[dispatched(f"j{i}", f"m{i}") for i in range(2_000)]))
    await journal.append(Batch(sent=[(f"m{i}", T0) for i in range(1_000)]))
    await journal.close()

    mark = pg_sql(MARK_SENT).replace("%s", "1", 1).replace("%s", "'m1500'", 1)
    plan = _execute(pg_url, f"EXPLAIN {mark}")
    assert "events_msg" in " ".join(line for (line,) in plan), plan


async def test_every_connection_plans_each_statement_afresh(pg_url):
    # A generic plan cached while the journal was empty would scan the whole table per mark.
    journal = await open_journal(pg_url)
    try:
        rows = await journal._reads.execute_fetchall("SHOW plan_cache_mode")
        written = await journal._writer.run(lambda conn: conn.execute("SHOW plan_cache_mode"))
        assert list(rows) == [("force_custom_plan",)]
        assert await written.fetchall() == [("force_custom_plan",)]
    finally:
        await journal.close()


async def test_a_read_after_the_server_dropped_the_pools_connections_is_answered(pg_url):
    journal = await open_journal(pg_url)
    try:
        await journal.append(Batch(events=[submitted("a")], jobs=[job("a")]))
        assert (await journal.job("a")).status == "running"  # the pool's connection is open
        name = pg_url.rsplit("/", 1)[1]
        dropped = _execute(
            pg_url.rsplit("/", 1)[0] + "/postgres",
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            f" WHERE datname = '{name}' AND application_name = ''",
        )
        assert dropped[0][0] >= 1
        # The read goes again on a new connection instead of failing.
        assert (await journal.job("a")).status == "running"
    finally:
        await journal.close()
