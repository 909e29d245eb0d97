"""Translate sqlite3 errors into `JournalError`s that name the journal file and suggest a fix."""

from __future__ import annotations

from pathlib import Path

from workflow_manager.errors import JournalError

__all__ = ["write_failure", "read_failure", "open_failure", "closed_error"]

# Primary result codes (the low byte of an extended code), from sqlite3.h.
_SQLITE_PERM = 3
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26


def _primary_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def _diagnosis(exc: BaseException) -> tuple[str, str | None]:
    """What went wrong in words, and the fix when the result code tells us one."""
    code = _primary_code(exc)
    if code == _SQLITE_FULL:
        return "disk full", "free space on that disk, then restart the manager"
    if code == _SQLITE_IOERR:
        return (
            "I/O error",
            "the disk may be full, failing or gone; check it, then restart the manager",
        )
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return "locked by another process", "is a second manager using the same journal?"
    if code in (_SQLITE_READONLY, _SQLITE_PERM, _SQLITE_CANTOPEN):
        return "cannot write", "check the permissions of the file and of its directory"
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return "corrupted", "restore a backup, or move the file aside to start an empty journal"
    return "error", None


def _message(prefix: str, exc: BaseException, path: Path) -> str:
    what, fix = _diagnosis(exc)
    message = f"{prefix}{what} at {path} ({exc})"
    return message if fix is None else f"{message}: {fix}"


def write_failure(exc: BaseException, path: Path) -> JournalError:
    """The error for a commit that failed: the manager must stop rather than lose events."""
    error = JournalError(_message("journal write failed: ", exc, path))
    error.__cause__ = exc
    return error


def read_failure(exc: BaseException, path: Path, what: str) -> JournalError:
    """The error for a query (`what` names it, e.g. 'running jobs') that failed."""
    error = JournalError(_message(f"cannot read {what} from the journal: ", exc, path))
    error.__cause__ = exc
    return error


def open_failure(exc: BaseException, path: Path) -> JournalError:
    """The error for a journal that SQLite refused to open or set up."""
    what, fix = _diagnosis(exc)
    if what == "corrupted":
        message = f"{path} is corrupted ({exc}): {fix}"
    else:
        message = f"cannot open the journal at {path}: {what} ({exc})"
        message = message if fix is None else f"{message}: {fix}"
    error = JournalError(message)
    error.__cause__ = exc
    return error


def closed_error(path: str | Path) -> JournalError:
    """The error for using a journal after `close()`."""
    return JournalError(f"the journal at {path} is closed")
