"""`open_journal`: a --db value to the journal it names, SQLite (a file path, the default) or
PostgreSQL (a postgresql:// URL)."""

from __future__ import annotations

from pathlib import Path

from workflow_manager.journal.base import BaseJournal
from workflow_manager.journal.journal import open_sqlite_journal

__all__ = ["open_journal", "is_postgres_url"]


def is_postgres_url(where: object) -> bool:
    """True when `where` is a postgresql:// (or postgres://) URL rather than a file path."""
    return isinstance(where, str) and where.lower().startswith(("postgresql://", "postgres://"))


async def open_journal(
    where: str | Path, *, synchronous: str = "FULL", create: bool = True
) -> BaseJournal:
    """Open the journal `where` names: a postgresql:// URL, else a SQLite file path.

    `synchronous` is the SQLite journal's (FULL or NORMAL); PostgreSQL commits as the server's
    `synchronous_commit` says (on by default: durable once committed). `create=False`: a
    PostgreSQL database with no journal is refused rather than given the tables (a SQLite
    file is created either way: check that it exists first).
    """
    if is_postgres_url(where):
        # Imported here: a manager on SQLite never loads psycopg.
        from workflow_manager.journal.postgres import open_pg_journal

        return await open_pg_journal(str(where), create=create)
    return await open_sqlite_journal(where, synchronous=synchronous)
