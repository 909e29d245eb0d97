"""The journal that makes the manager durable: every inbound and outbound message, in order.

`Journal` (in `protocol`) is what the manager needs of it; `SqliteJournal` (a file, the
default) and `postgres.PgJournal` (a postgresql:// URL) are its two implementations, which
share `base.BaseJournal` (group commit, reads, retention's loop):

    journal = await open_journal("manager.db")   # or "postgresql://wm@db.example/wm"
    await journal.append(Batch(events=[...], jobs=[...]))   # resolves once committed
    rows = await journal.replay_rows(await journal.running_roots())
    await journal.close()

Modules: `protocol` (the `Journal` protocol), `opening` (`open_journal`: a --db value to a
journal), `base` (what both share), `journal` (`SqliteJournal`), `schema` (SQLite's tables,
recognising our files, opening), `checkahead` (a file's check, begun before it is opened),
`writer` (group commit over a `Store`), `sqlitestore` (SQLite's write connection),
`statements` (the shared writes), `codec` (rows to parameters), `storable` (NUL and lone
surrogates, one rule for both), `queries` (reads), `history` (reads for browsing jobs),
`retention` (deleting finished jobs), `inspect` (formatting rows for the CLI), `postgres/`
(the PostgreSQL journal). Every sqlite3 or psycopg error becomes a
`workflow_manager.errors.JournalError` naming the file or the database (never its password).
"""

from workflow_manager.journal.journal import SqliteJournal, open_sqlite_journal
from workflow_manager.journal.opening import is_postgres_url, open_journal
from workflow_manager.journal.protocol import JobHistory, Journal
from workflow_manager.journal.records import REPLAYED_KINDS, Batch, EventKind, EventRow, JobRow

__all__ = [
    "Journal",
    "JobHistory",
    "SqliteJournal",
    "open_journal",
    "open_sqlite_journal",
    "is_postgres_url",
    "Batch",
    "EventKind",
    "EventRow",
    "JobRow",
    "REPLAYED_KINDS",
]
