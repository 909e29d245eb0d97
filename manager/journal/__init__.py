"""The SQLite journal that makes the manager durable: every inbound and outbound message, in order.

    journal = await open_journal("manager.db")
    await journal.append(Batch(events=[...], jobs=[...]))   # resolves once committed
    rows = await journal.replay_rows(await journal.running_roots())
    await journal.close()

Modules: `schema` (tables, recognising our files, opening), `writer` (group commit), `queries`
(reads), `retention` (deleting finished jobs), `inspect` (formatting rows for the CLI).
Every sqlite3 error becomes a `manager.errors.JournalError` naming the file.
"""

from manager.journal.journal import Journal, open_journal
from manager.journal.records import REPLAYED_KINDS, Batch, EventKind, EventRow, JobRow

__all__ = [
    "Journal",
    "open_journal",
    "Batch",
    "EventKind",
    "EventRow",
    "JobRow",
    "REPLAYED_KINDS",
]
