"""Where the benchmark's managers keep their journals: a fresh SQLite file each (the default),
or, with `--db postgresql://...`, a fresh schema each in that database (dropped at the end)."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from bench.procs import BenchError

__all__ = ["Journals"]

_SIZE = """
SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind = 'r'
"""


class Journals:
    """Hands out fresh journals (`--db` values) and measures them."""

    def __init__(self, tmp: Path, postgres_url: str | None) -> None:
        self._tmp = tmp
        self._url = postgres_url
        self._schemas: dict[str, str] = {}  # --db URL -> its schema

    @property
    def kind(self) -> str:
        """What the journals are, for the report: "SQLite" or "PostgreSQL"."""
        return "SQLite" if self._url is None else "PostgreSQL"

    def new(self, name: str, sqlite: bool = False) -> str:
        """A fresh, empty journal named after `name`: its --db value (a SQLite file when
        `sqlite`, even with --db)."""
        if self._url is None or sqlite:
            return str(self._tmp / f"{name}.db")
        schema = f"bench_{uuid.uuid4().hex[:8]}_{name}"
        self._execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        parts = urlsplit(self._url)
        query = f"{parts.query}&" if parts.query else ""
        url = parts._replace(query=f"{query}options=-csearch_path%3D{schema}").geturl()
        self._schemas[url] = schema
        return url

    def size_bytes(self, db: str) -> int:
        """The journal's size on disk: the file and its WAL, or its tables with their indexes."""
        schema = self._schemas.get(db)
        if schema is None:
            return sum(p.stat().st_size for p in Path(db).parent.glob(Path(db).name + "*"))
        with psycopg.connect(self._url or "") as conn:
            row = conn.execute(_SIZE, (schema,)).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        """Drop every schema handed out (the SQLite files go with the run's directory)."""
        for schema in self._schemas.values():
            self._execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
        self._schemas.clear()

    def _execute(self, statement: sql.Composed) -> None:
        try:
            with psycopg.connect(self._url or "", autocommit=True) as conn:
                conn.execute(statement)
        except psycopg.Error as exc:
            raise BenchError(f"PostgreSQL at --db: {' '.join(str(exc).split())}") from exc
