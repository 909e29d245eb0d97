"""A payload store in PostgreSQL: the table `wm_payloads` (docs/protocol.md, "Stores")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

import psycopg

from payload_refs.errors import PayloadRefError
from payload_refs.refs import Ref
from payload_refs.stores import CHUNK, checked, ref_for, shown_url, well_formed

__all__ = ["CREATE_TABLE", "PostgresStore"]

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS wm_payloads (
    key       text PRIMARY KEY,
    job_id    text NOT NULL,
    sha256    text NOT NULL,
    size      bigint NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now(),
    value     bytea NOT NULL
)"""
_INDEX = "CREATE INDEX IF NOT EXISTS wm_payloads_job ON wm_payloads (job_id)"
_CONNECT_TIMEOUT_S = 5


class PostgresStore:
    """Values as rows of `wm_payloads`, over one connection made at first use (and again after
    it breaks); the table is created by whoever uses it first."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self.where = shown_url(url)
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        conn = await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S
        )
        try:
            await conn.execute(CREATE_TABLE)
            await conn.execute(_INDEX)
        except psycopg.errors.UniqueViolation:
            pass  # another party created it at the same moment
        self._conn = conn
        return conn

    async def _run(self, what: str, query: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self._lock:
            try:
                conn = await self._connection()
                cursor = await conn.execute(query, args)
                return await cursor.fetchall() if cursor.description else []
            except psycopg.Error as exc:
                if self._conn is not None and self._conn.broken:
                    self._conn = None
                reason = (
                    str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                )
                raise PayloadRefError(f"{what}: cannot use {self.where}: {reason}") from None

    async def put(self, job_id: str, data: bytes) -> Ref:
        ref = ref_for(self.name, job_id, data)
        await self._run(
            ref.uri,
            "INSERT INTO wm_payloads (key, job_id, sha256, size, value) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
            (ref.key, job_id, ref.sha256, ref.size, data),
        )
        return ref

    async def get(self, ref: Ref) -> bytes:
        rows = await self._run(
            ref.uri, "SELECT value FROM wm_payloads WHERE key = %s", (well_formed(ref).key,)
        )
        if not rows:
            raise PayloadRefError(f"{ref.uri}: not found in {self.where}")
        return checked(ref, bytes(rows[0][0]), self.where)

    async def chunks(self, ref: Ref) -> AsyncIterator[bytes]:
        key = well_formed(ref).key
        rows = await self._run(ref.uri, "SELECT size FROM wm_payloads WHERE key = %s", (key,))
        if not rows:
            raise PayloadRefError(f"{ref.uri}: not found in {self.where}")
        size = int(rows[0][0])
        for start in range(0, size, CHUNK):
            piece = await self._run(
                ref.uri,
                "SELECT substring(value FROM %s FOR %s) FROM wm_payloads WHERE key = %s",
                (start + 1, CHUNK, key),
            )
            if not piece:
                raise PayloadRefError(f"{ref.uri}: removed from {self.where} while being read")
            yield bytes(piece[0][0])

    async def job_ids(self, stored_before: float) -> set[str]:
        rows = await self._run(
            f"store {self.name!r}",
            "SELECT job_id FROM wm_payloads GROUP BY job_id "
            "HAVING max(stored_at) < to_timestamp(%s)",
            (stored_before,),
        )
        return {row[0] for row in rows}

    async def remove_jobs(self, job_ids: Iterable[str]) -> int:
        ids = list(job_ids)
        if not ids:
            return 0
        rows = await self._run(
            f"store {self.name!r}",
            "WITH gone AS (DELETE FROM wm_payloads WHERE job_id = ANY(%s) RETURNING job_id) "
            "SELECT count(DISTINCT job_id) FROM gone",
            (ids,),
        )
        return int(rows[0][0]) if rows else 0

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
