"""The journal that makes the manager durable: every inbound and outbound message, in order.

`Journal` (in `protocol`) is what the manager needs of it; `SqliteJournal` is the one there is:

    journal = await open_journal("manager.db")
    await journal.append(Batch(events=[...], jobs=[...]))   # resolves once committed
    rows = await journal.replay_rows(await journal.running_roots())
    await journal.close()

Modules: `protocol` (the `Journal` protocol), `journal` (`SqliteJournal`), `schema` (tables,
recognising our files, opening), `writer` (group commit), `queries` (reads), `history` (reads
for browsing jobs), `retention` (deleting finished jobs), `inspect` (formatting rows for the CLI).
Every sqlite3 error becomes a `manager.errors.JournalError` naming the file.
"""

from manager.journal.journal import SqliteJournal, open_journal
from manager.journal.protocol import JobHistory, Journal
from manager.journal.records import REPLAYED_KINDS, Batch, EventKind, EventRow, JobRow

__all__ = [
    "Journal",
    "JobHistory",
    "SqliteJournal",
    "open_journal",
    "Batch",
    "EventKind",
    "EventRow",
    "JobRow",
    "REPLAYED_KINDS",
]
