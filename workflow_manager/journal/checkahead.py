"""A SQLite journal file's check, started early: `check_ahead` as a manager starts, its result
taken by `open_sqlite_journal`.

`schema.check_file` reads the whole file (`PRAGMA quick_check`): about 0.1 s for a journal of
10,000 running jobs, more for a larger one, and until now every start waited for it after
importing the rest of the manager. SQLite runs the check without Python's lock, so a thread
started before those imports (the engine, the configuration's models, the transport: most of
a start) does it on another core meanwhile. A start that never opens the file (a bad flag)
leaves the thread to end with the process: it only reads.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from pathlib import Path

from workflow_manager.journal.schema import check_file

__all__ = ["check_ahead", "checked_ahead"]

_ahead: dict[str, Future[bool]] = {}
_lock = threading.Lock()


def check_ahead(path: str | Path) -> None:
    """Start checking the SQLite journal file at `path` on a thread of its own; the next
    `open_sqlite_journal` of the same file takes the result."""
    key = os.path.abspath(path)
    future: Future[bool] = Future()

    def run() -> None:
        try:
            future.set_result(check_file(Path(key)))
        except BaseException as exc:  # handed to the opener, which raises it as it would have
            future.set_exception(exc)

    with _lock:
        _ahead[key] = future
    threading.Thread(target=run, name="journal-check", daemon=True).start()


def checked_ahead(path: Path) -> Future[bool] | None:
    """The check `check_ahead` started for `path`, taken once (None when none was started)."""
    with _lock:
        return _ahead.pop(os.path.abspath(path), None)
