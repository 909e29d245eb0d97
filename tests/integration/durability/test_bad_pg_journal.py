"""A PostgreSQL journal the manager cannot use stops it with one clear line (no traceback, no
password); losing the database mid-run stops it too, and a restart loses no job."""

from __future__ import annotations

import re
import uuid
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from .helpers import Child, check_outcomes

EXIT_TIMEOUT_S = 20.0
JOBS = 20
OUTCOMES_TIMEOUT_S = 60.0


@pytest.fixture
def journal_kind() -> str:
    return "postgresql"


def _execute(url: str, *statements: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _with_password(url: str) -> str:
    """`url` with a password in it (which no message may show)."""
    parts = urlsplit(url)
    netloc = f"{parts.username}:s3cret@{parts.hostname}:{parts.port or 5432}"
    return parts._replace(netloc=netloc).geturl()


async def refused(rig, db: str, *words: str) -> str:
    """Serve on `db`; it must refuse quickly with one `error:` line holding `words`."""
    finished = await (await Child.start(*rig.serve_args(db=db))).wait(EXIT_TIMEOUT_S)
    lines = finished.error_lines
    assert finished.returncode != 0, finished.stderr
    assert "Traceback" not in finished.stderr, finished.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), finished.stderr
    assert "s3cret" not in finished.stderr, finished.stderr
    for word in words:
        assert re.search(word, lines[0]), f"{word!r} not in {lines[0]!r}"
    return lines[0]


async def test_an_unreachable_server(rig):
    url = _with_password(rig.db).replace(":5432/", ":1/")
    await refused(rig, url, r"postgresql://\w+@127\.0\.0\.1:1/", "Connection refused")


async def test_a_missing_database(rig):
    url = rig.db + "_missing"
    await refused(rig, url, "does not exist", "createdb")


async def test_a_foreign_database_is_left_untouched(rig):
    _execute(rig.db, "CREATE TABLE invoices (id int)")
    await refused(rig, rig.db, "not a workflow-manager journal", "invoices", "left untouched")
    with psycopg.connect(rig.db) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchall() == [("invoices",)]


async def test_a_journal_of_a_newer_version(rig):
    await rig.start_manager()
    assert await rig.stop_manager() == 0, rig.manager.output
    _execute(rig.db, "UPDATE workflow_manager_schema SET version = version + 1")
    await refused(rig, rig.db, "newer workflow-manager", "upgrade")


async def test_losing_the_database_stops_the_manager_and_a_restart_loses_nothing(rig):
    outcomes = await rig.outcome_queue()
    await rig.start_worker()
    manager = await rig.start_manager()
    payloads = {str(uuid.uuid4()): n for n in range(JOBS)}
    for job_id, n in payloads.items():
        await rig.trigger("chaos-counts", {"n": n, "delay_s": 0.2}, job_id, outcomes.queue_name)
    await outcomes.wait_for(1, OUTCOMES_TIMEOUT_S)

    # What a database failover or restart does to the manager's connections.
    name = urlsplit(rig.db).path.lstrip("/")
    _execute(
        rig.db.rsplit("/", 1)[0] + "/postgres",
        sql.SQL("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = {}")
        .format(sql.Literal(name))
        .as_string(),
    )
    code = await manager.exited(EXIT_TIMEOUT_S)

    assert code != 0, manager.output
    assert "Traceback" not in manager.output, manager.output
    assert re.search(r"journal write failed at postgresql://", manager.output), manager.output
    assert outcomes.distinct < JOBS, "every job ended before the database went away"
    await rig.start_manager()
    await outcomes.wait_for(JOBS, OUTCOMES_TIMEOUT_S)
    check_outcomes(outcomes, payloads)
    assert await rig.stop_manager() == 0, rig.manager.output
