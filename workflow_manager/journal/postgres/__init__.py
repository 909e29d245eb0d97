"""The journal in PostgreSQL: `--db postgresql://USER@HOST/DB`, the same promises as SQLite's.

Modules: `location` (the URL, shown without its password), `schema` (tables, versioned
migrations, recognising our database), `store` (the write connection: group commits), `reads`
(the shared queries on a pool), `retention`, `failures` (psycopg errors as `JournalError`s),
`journal` (`PgJournal`, `open_pg_journal`).
"""

from workflow_manager.journal.postgres.journal import PgJournal, open_pg_journal

__all__ = ["PgJournal", "open_pg_journal"]
