"""`workflow-manager journal JOB_ID --db postgresql://...` prints a job's rows from PostgreSQL,
and reading a database with no journal creates nothing there."""

from __future__ import annotations

import subprocess
import sys

import psycopg

from tests.unit.journal.helpers import T0, dispatched, event, replied, submitted
from workflow_manager.journal import Batch, open_journal

JOB = "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10"


def _journal_command(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workflow_manager", "journal", JOB, "--db", url],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


async def test_prints_a_jobs_rows_in_order(pg_url):
    journal = await open_journal(pg_url)
    rows = [
        submitted(JOB),
        dispatched(JOB, "m1", step="count"),
        replied(JOB, step="count", body=b'{"words": 3}', at=T0 + 1),
        event("finished", JOB, at=T0 + 2),
    ]
    await journal.append(Batch(events=rows))
    await journal.close()

    done = _journal_command(pg_url)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[2] for line in lines] == ["submitted", "dispatched", "replied", "finished"]
    assert "msg=m1 PENDING" in lines[1]
    assert '{"words": 3}' in lines[2]


def test_a_database_without_a_journal_is_left_as_it_is(pg_url):
    done = _journal_command(pg_url)

    assert done.returncode != 0
    assert done.stderr.strip() == f"error: no journal at {pg_url} (use --db)"
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchall() == []
