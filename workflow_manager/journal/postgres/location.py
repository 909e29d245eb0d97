"""A PostgreSQL journal's URL: parsed by libpq's rules, and shown without its password."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from workflow_manager.errors import JournalError

__all__ = ["PgLocation", "CONNECT_TIMEOUT_S"]

# An unreachable host fails start-up after this long instead of hanging (the URL may set its own).
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class PgLocation:
    """Where the journal lives: the libpq connection string, and the URL to show in messages."""

    conninfo: str = field(repr=False)  # may hold a password: never logged
    shown: str

    @classmethod
    def parse(cls, url: str) -> PgLocation:
        """Parse a postgresql:// URL (JournalError naming the problem if it is not one)."""
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise JournalError(
                f"--db: not a valid PostgreSQL URL ({_first_line(exc)}); expected "
                "postgresql://USER@HOST[:PORT]/DATABASE"
            ) from exc
        extra = {} if "connect_timeout" in params else {"connect_timeout": CONNECT_TIMEOUT_S}
        return cls(make_conninfo(url, **extra), _shown(params))

    def __str__(self) -> str:
        return self.shown


def _shown(params: Mapping[str, object]) -> str:
    user = f"{params['user']}@" if params.get("user") else ""
    host = str(params.get("host") or "localhost")
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{host}{port}/{params.get('dbname') or ''}"


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
