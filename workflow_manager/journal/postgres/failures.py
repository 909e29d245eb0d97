"""Translate psycopg errors into `JournalError`s that name the database and suggest a fix."""

from __future__ import annotations

import psycopg

from workflow_manager.errors import JournalError
from workflow_manager.journal.postgres.location import PgLocation

__all__ = ["open_failure", "write_failure", "read_failure", "is_database_error"]

# (words that must all be in PostgreSQL's or libpq's message, the fix to suggest)
_FIXES = (
    (("password authentication failed",), "check the user and password in --db"),
    (("no password supplied",), "put the password in --db (or in ~/.pgpass)"),
    (("role", "does not exist"), "check the user in --db"),
    (
        ("database", "does not exist"),
        "create that database (createdb NAME), or name another one in --db",
    ),
    (("connection refused",), "is PostgreSQL running there and accepting TCP/IP connections?"),
    (("failed to resolve host",), "check the host in --db"),
    (("timeout expired",), "is the host reachable, and PostgreSQL listening on that port?"),
    (("permission denied",), "grant the user CREATE on the schema, or use another database"),
    (("no space left",), "free space on the database server's disk, then restart the manager"),
    (
        ("terminating connection",),
        "the database server closed the connection (restarted?); restart the manager",
    ),
)


def _words(exc: BaseException) -> str:
    """psycopg's message on one line (libpq's hints come on lines of their own)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _fix(text: str) -> str | None:
    lowered = text.lower()
    return next((fix for words, fix in _FIXES if all(w in lowered for w in words)), None)


def _error(message: str, exc: BaseException) -> JournalError:
    fix = _fix(message)
    error = JournalError(message if fix is None else f"{message}: {fix}")
    error.__cause__ = exc
    return error


def open_failure(exc: BaseException, where: PgLocation) -> JournalError:
    """The error for a database the manager cannot connect to or set up."""
    return _error(f"cannot open the journal at {where} ({_words(exc)})", exc)


def write_failure(exc: BaseException, where: PgLocation) -> JournalError:
    """The error for a commit that failed: the manager must stop rather than lose events."""
    return _error(f"journal write failed at {where} ({_words(exc)})", exc)


def read_failure(exc: BaseException, where: PgLocation, what: str) -> JournalError:
    """The error for a query (`what` names it, e.g. 'running jobs') that failed."""
    return _error(f"cannot read {what} from the journal at {where} ({_words(exc)})", exc)


def is_database_error(exc: BaseException) -> bool:
    """True for the errors of psycopg (and its pool), which the journal translates."""
    return isinstance(exc, psycopg.Error)
