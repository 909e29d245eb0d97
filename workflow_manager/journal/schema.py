"""The journal's tables, how a file is recognised as ours, and opening it for writing and reading.

A journal is an SQLite file in WAL mode whose `application_id` is `APPLICATION_ID` and whose
`user_version` is the schema version. Before anything writes to an existing file, it is inspected
through a read-only (or immutable) connection, so a file that is not ours is never modified and
gets no -wal/-shm files beside it.

`synchronous`: FULL (the default) fsyncs the WAL at every group commit, so a message acked after
its commit survives a power loss. NORMAL fsyncs only at checkpoints: it survives a crash of the
manager process, but a power loss may lose the last commits (messages already acked).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import aiosqlite

from workflow_manager.errors import JournalError
from workflow_manager.journal.failures import open_failure

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "SYNCHRONOUS_MODES",
    "check_file",
    "connect_writer",
    "connect_reader",
]

APPLICATION_ID = 0x574D4752  # "WMGR"
SCHEMA_VERSION = 2  # 2: indexes for browsing (a parent's children, the latest jobs)
SYNCHRONOUS_MODES = ("FULL", "NORMAL")
BUSY_TIMEOUT_MS = 5_000
# A WAL grown large while a reader held it open is cut back to this after the next checkpoint.
JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_HEADER_BYTES = 100
_WRITE_VERSION_OFFSET = 18  # 2 in a WAL-mode file
_WAL_WRITE_VERSION = 2
_APPLICATION_ID_OFFSET = 68

_DDL = f"""
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    job_id TEXT,
    root_id TEXT,
    step TEXT,
    attempt INTEGER,
    body BLOB,
    meta TEXT NOT NULL DEFAULT '{{}}',
    msg_id TEXT,
    sent_at REAL
);
CREATE INDEX IF NOT EXISTS events_root ON events(root_id, seq);
CREATE INDEX IF NOT EXISTS events_job ON events(job_id, seq);
CREATE INDEX IF NOT EXISTS events_msg ON events(msg_id) WHERE msg_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_pending ON events(seq)
    WHERE sent_at IS NULL AND msg_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_orphan ON events(at) WHERE root_id IS NULL;

CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    root_id TEXT NOT NULL,
    parent_id TEXT,
    workflow TEXT NOT NULL,
    definition TEXT NOT NULL,
    flow TEXT NOT NULL,
    status TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    finished_at REAL,
    payload TEXT NOT NULL,
    result TEXT,
    error TEXT,
    snapshot TEXT
);
CREATE INDEX IF NOT EXISTS jobs_running ON jobs(parent_id, submitted_at) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS jobs_workflow ON jobs(workflow, submitted_at) WHERE parent_id IS NULL;
CREATE INDEX IF NOT EXISTS jobs_root ON jobs(root_id);
CREATE INDEX IF NOT EXISTS jobs_roots_finished ON jobs(finished_at) WHERE parent_id IS NULL;
CREATE INDEX IF NOT EXISTS jobs_roots_submitted ON jobs(submitted_at) WHERE parent_id IS NULL;
CREATE INDEX IF NOT EXISTS jobs_parent ON jobs(parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS definitions (
    hash TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    definition TEXT NOT NULL
) WITHOUT ROWID;

PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {SCHEMA_VERSION};
"""


def _check_new_path(path: Path) -> None:
    parent = path.parent
    if not parent.is_dir():
        raise JournalError(
            f"cannot create the journal at {path}: directory {parent} does not exist "
            "(create it, or choose another journal path)"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise JournalError(
            f"cannot create the journal at {path}: directory {parent} is not writable"
        )


def _read_header(path: Path) -> bytes:
    if path.is_dir():
        raise JournalError(
            f"cannot open the journal at {path}: it is a directory "
            f"(give a file path, such as {path / 'journal.db'})"
        )
    with path.open("rb") as file:
        return file.read(_SQLITE_HEADER_BYTES)


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " ORDER BY name"
    ).fetchall()
    return [name for (name,) in rows]


def _connect_read_only(path: Path, header: bytes) -> sqlite3.Connection:
    # Even a read-only connection to a WAL-mode file creates -wal and -shm beside it. A file
    # that may not be ours, and whose -wal holds nothing, is read as immutable: no side files.
    app_id = int.from_bytes(header[_APPLICATION_ID_OFFSET : _APPLICATION_ID_OFFSET + 4], "big")
    in_wal_mode = header[_WRITE_VERSION_OFFSET] == _WAL_WRITE_VERSION
    wal = Path(f"{path}-wal")
    wal_empty = not wal.exists() or wal.stat().st_size == 0
    immutable = app_id != APPLICATION_ID and in_wal_mode and wal_empty
    uri = path.resolve().as_uri() + ("?immutable=1" if immutable else "?mode=ro")
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise open_failure(exc, path) from exc


def _inspect_ours(conn: sqlite3.Connection, path: Path, version: int) -> bool:
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"{path} was written by a newer workflow-manager (journal schema {version}; this "
            f"version reads up to {SCHEMA_VERSION}): upgrade workflow-manager, or use another "
            "journal file"
        )
    problems = [line for (line,) in conn.execute("PRAGMA quick_check(5)").fetchall()]
    if problems != ["ok"]:
        raise JournalError(
            f"{path} is corrupted ({'; '.join(problems)}): restore a backup, or move it aside "
            "to start with an empty journal"
        )
    return version < SCHEMA_VERSION


def _inspect(path: Path, header: bytes) -> bool:
    """Inspect an existing SQLite file read-only; True when it needs our schema."""
    conn = _connect_read_only(path, header)
    try:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        tables = _tables(conn)
        if app_id == APPLICATION_ID:
            return _inspect_ours(conn, path, version)
    except sqlite3.Error as exc:
        raise open_failure(exc, path) from exc
    finally:
        conn.close()
    if app_id == 0 and not tables:
        return True
    if tables:
        what = f"it holds tables {', '.join(tables)}"
    else:
        what = f"its application_id is {app_id:#x}, not {APPLICATION_ID:#x}"
    raise JournalError(
        f"{path} is not a workflow-manager journal: {what} (left untouched; choose another "
        "journal path)"
    )


def check_file(path: Path) -> bool:
    """Validate the file at `path` without writing to it; True when the schema must be created.

    Blocking (reads the file and may run `quick_check`): call it in a thread.
    """
    try:
        return _check_file(path)
    except OSError as exc:
        raise JournalError(f"cannot open the journal at {path}: {exc.strerror or exc}") from exc


def _check_file(path: Path) -> bool:
    if not path.exists():
        _check_new_path(path)
        return True
    header = _read_header(path)
    if not header:
        return True
    if len(header) < _SQLITE_HEADER_BYTES or not header.startswith(_SQLITE_MAGIC):
        raise JournalError(
            f"{path} is not a SQLite database (or is corrupted): choose another journal path, "
            "or move the file aside"
        )
    if not os.access(path, os.W_OK):
        raise JournalError(f"cannot open the journal at {path}: the file is not writable")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise JournalError(
            f"cannot open the journal at {path}: directory {path.parent} is not writable "
            "(SQLite keeps its -wal and -shm files beside the journal)"
        )
    return _inspect(path, header)


def connect_writer(path: Path, synchronous: str, create: bool) -> sqlite3.Connection:
    """The connection that writes: WAL mode, the given durability, the schema if `create`.

    Blocking: call it on the thread that will use the connection (the journal writer's).
    """
    try:
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise open_failure(exc, path) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode.lower() != "wal":
            raise JournalError(
                f"cannot open the journal at {path}: SQLite refused WAL mode (got {mode!r}); "
                "put the journal on a local filesystem"
            )
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES}")
        if create:
            # One transaction: a crash never leaves a half-made schema carrying our id.
            conn.executescript("BEGIN IMMEDIATE;" + _DDL + "COMMIT;")
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise open_failure(exc, path) from exc
        raise
    return conn


async def connect_reader(path: Path) -> aiosqlite.Connection:
    """A second connection for queries: in WAL mode it reads while the writer commits."""
    conn = await _connect(path)
    try:
        await conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        await conn.close()
        raise open_failure(exc, path) from exc
    return conn


def connect_lookups(path: Path) -> sqlite3.Connection:
    """A third connection, for point lookups made on the event loop itself (`SqliteJournal.job`):
    read only, and never waiting for a lock (busy_timeout 0: a lookup that would wait goes to
    the reading thread instead)."""
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise open_failure(exc, path) from exc
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA busy_timeout = 0")
    except sqlite3.Error as exc:
        conn.close()
        raise open_failure(exc, path) from exc
    return conn


async def _connect(path: Path) -> aiosqlite.Connection:
    # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
    try:
        conn = await aiosqlite.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise open_failure(exc, path) from exc
    try:
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    except sqlite3.Error as exc:
        await conn.close()
        raise open_failure(exc, path) from exc
    return conn
