"""A fresh PostgreSQL database per test (created from template0, dropped after), on the server
at TEST_PG_URL (default: 127.0.0.1:5432, user postgres); tests skip, saying why, without one."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

ADMIN_URL = os.environ.get("TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
PARAMS = ["sqlite", "postgresql"]  # ids of the journal kinds a parametrised test runs on


@cache
def unreachable() -> str | None:
    """Why PostgreSQL cannot be used by the tests, or None when it can."""
    try:
        with psycopg.connect(ADMIN_URL, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        first = " ".join(str(exc).split())
        return f"PostgreSQL is not reachable at {ADMIN_URL} ({first}); set TEST_PG_URL"


def skip_without_postgres() -> None:
    """Skip the calling test when there is no PostgreSQL to run it on."""
    reason = unreachable()
    if reason is not None:
        pytest.skip(reason)


def url_of(name: str) -> str:
    """The URL of database `name` on the test server."""
    return urlsplit(ADMIN_URL)._replace(path=f"/{name}").geturl()


def create_database() -> str:
    """Create a database with a unique name; its URL."""
    skip_without_postgres()
    name = f"wm_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))
    return url_of(name)


def drop_database(url: str) -> None:
    """Drop the database at `url`, closing any connection left to it."""
    name = conninfo_to_dict(url)["dbname"]
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextmanager
def fresh_database() -> Iterator[str]:
    """A new empty database for the block; its URL. Dropped afterwards."""
    url = create_database()
    try:
        yield url
    finally:
        drop_database(url)
