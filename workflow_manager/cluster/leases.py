"""Partition leases in PostgreSQL: who owns each partition, at which epoch, until when.

Taking a partition (free, or its lease expired) bumps its epoch; renewing needs the epoch we
took it at. Every journal commit of a partitioned manager locks the lease rows of the
partitions it writes (`FOR SHARE`) and checks their owner and epoch (`check_fence`), so once
another manager has taken a partition (which must wait for that lock) the old owner's next
commit fails: it can never write for that partition again. Times are the database's clock,
so the managers' clocks need not agree.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import psycopg

from workflow_manager.cluster.view import Lease, Member
from workflow_manager.errors import FencedOut, JournalError, ManagerError

__all__ = [
    "Lease",
    "LeaseTable",
    "Member",
    "check_fence",
    "configure_partitions",
]

_NOW = "extract(epoch FROM clock_timestamp())"
_COUNT = "SELECT count FROM cluster_partitions"
# Returns, with each partition taken, when its previous owner last renewed it (NULL: never
# run): its firings since then may have been missed (`Ownership.run_since`).
_TAKE = f"""
WITH free AS (
    SELECT partition, renewed_at FROM partition_leases
    WHERE owner IS NULL OR expires_at < {_NOW}
    ORDER BY partition LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
UPDATE partition_leases SET owner = %(owner)s, epoch = epoch + 1,
    expires_at = {_NOW} + %(ttl)s, renewed_at = {_NOW}
FROM free WHERE partition_leases.partition = free.partition
RETURNING partition_leases.partition, partition_leases.epoch, free.renewed_at, {_NOW}
"""
_RENEW = f"""
UPDATE partition_leases SET expires_at = {_NOW} + %(ttl)s, renewed_at = {_NOW}
FROM unnest(%(partitions)s::integer[], %(epochs)s::bigint[]) AS held(partition, epoch)
WHERE partition_leases.partition = held.partition AND partition_leases.epoch = held.epoch
    AND owner = %(owner)s
RETURNING partition_leases.partition, partition_leases.epoch
"""
_RELEASE = """
UPDATE partition_leases SET owner = NULL, expires_at = 0
WHERE owner = %(owner)s AND partition = ANY(%(partitions)s)
"""
_LIST = f"""
SELECT partition, owner, epoch, expires_at - {_NOW}, {_NOW} - renewed_at
FROM partition_leases ORDER BY partition
"""
# Rows of managers gone for a minute are deleted by whoever heartbeats next.
_HEARTBEAT = f"""
WITH gone AS (DELETE FROM cluster_members WHERE expires_at < {_NOW} - 60 AND name <> %(name)s)
INSERT INTO cluster_members (name, api_url, joined_at, renewed_at, expires_at)
VALUES (%(name)s, %(api_url)s, {_NOW}, {_NOW}, {_NOW} + %(ttl)s)
ON CONFLICT (name) DO UPDATE SET api_url = excluded.api_url, renewed_at = excluded.renewed_at,
    expires_at = excluded.expires_at
"""
_MEMBERS = f"""
SELECT name, api_url, {_NOW} - renewed_at FROM cluster_members
WHERE expires_at >= {_NOW} ORDER BY name
"""
_LEAVE = "DELETE FROM cluster_members WHERE name = %(name)s"
# One round trip: lock and read the leases, and count the commit in `partition_commits`
# at the epochs we hold (rolled back with the transaction when the check fails).
_FENCE = f"""
WITH leases AS (
    SELECT partition, owner, epoch FROM partition_leases
    WHERE partition = ANY(%(partitions)s) ORDER BY partition FOR SHARE
), counted AS (
    INSERT INTO partition_commits AS c (partition, epoch, owner, first_at, last_at, commits)
    SELECT held.partition, held.epoch, %(owner)s, {_NOW}, {_NOW}, 1
    FROM unnest(%(partitions)s::integer[], %(epochs)s::bigint[]) AS held(partition, epoch)
    ON CONFLICT (partition, epoch) DO UPDATE SET last_at = excluded.last_at,
        commits = c.commits + 1
)
SELECT partition, owner, epoch FROM leases ORDER BY partition
"""


async def configure_partitions(conn: psycopg.AsyncConnection, count: int | None) -> None:
    """Fix the database's number of partitions at `count`, or check it (None: unpartitioned).

    ManagerError when the database was set up with another number (or none, or some): the
    partition of every job depends on it, so it cannot change under running jobs.
    """
    async with conn.transaction():
        await conn.execute("LOCK TABLE cluster_partitions IN EXCLUSIVE MODE")
        row = await (await conn.execute(_COUNT)).fetchone()
        stored = None if row is None else int(row[0])
        if stored == count:
            return
        if stored is None and count is not None:
            running = await (
                await conn.execute("SELECT 1 FROM jobs WHERE status = 'running' LIMIT 1")
            ).fetchone()
            if running is not None:
                raise ManagerError(
                    f"--partitions {count}: this journal has running jobs of a manager without "
                    "partitions; let them finish (run it without --partitions), then start "
                    "with --partitions"
                )
            await conn.execute("INSERT INTO cluster_partitions (count) VALUES (%s)", (count,))
            await conn.execute(
                "INSERT INTO partition_leases (partition) SELECT generate_series(0, %s - 1)",
                (count,),
            )
            return
        given = "no --partitions" if count is None else f"--partitions {count}"
        raise ManagerError(
            f"this journal's jobs are split into {stored} partitions, and the manager was "
            f"started with {given}: start every manager on it with --partitions {stored} "
            "(the number is fixed per database)"
        )


class LeaseTable:
    """The lease statements of one manager (`owner`), on a connection of its own."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection,
        owner: str,
        ttl_s: float,
        conninfo: str = "",
        api_url: str | None = None,
    ) -> None:
        self._conn = conn
        self._conninfo = conninfo  # to connect again after the database went away
        self.owner = owner
        self.ttl_s = ttl_s
        self.api_url = api_url  # where the other managers reach our HTTP API

    async def heartbeat(self) -> None:
        """Say we are alive (and where our API is) for another time to live."""
        params = {"name": self.owner, "api_url": self.api_url, "ttl": self.ttl_s}
        await self._rows(_HEARTBEAT, params)

    async def members(self) -> list[Member]:
        """The managers alive now (heartbeated within their time to live), by name."""
        rows = await self._rows(_MEMBERS, None)
        return [Member(name, url, float(age)) for name, url, age in rows]

    async def leave(self) -> None:
        """No longer count as a member (a clean stop: the others rebalance at once)."""
        await self._rows(_LEAVE, {"name": self.owner})

    async def take(self, limit: int) -> dict[int, tuple[int, float | None]]:
        """Take up to `limit` free or expired partitions; partition -> (the new epoch, seconds
        since its previous owner last renewed it, None if no manager ever ran it)."""
        if limit <= 0:
            return {}
        rows = await self._rows(_TAKE, {"owner": self.owner, "ttl": self.ttl_s, "limit": limit})
        return {
            int(p): (int(e), None if before is None else float(now) - float(before))
            for p, e, before, now in rows
        }

    async def renew(self, held: Mapping[int, int]) -> dict[int, int]:
        """Renew the leases in `held` (partition -> epoch); those still ours."""
        if not held:
            return {}
        params = {
            "owner": self.owner,
            "ttl": self.ttl_s,
            "partitions": list(held),
            "epochs": list(held.values()),
        }
        return {int(p): int(e) for p, e in await self._rows(_RENEW, params)}

    async def release(self, partitions: Collection[int]) -> None:
        """Give `partitions` up (another manager may take them at once)."""
        if partitions:
            await self._rows(_RELEASE, {"owner": self.owner, "partitions": list(partitions)})

    async def leases(self) -> list[Lease]:
        """Every partition's lease."""
        rows = await self._rows(_LIST, None)
        return [
            Lease(int(p), o, int(e), float(x), None if r is None else float(r))
            for p, o, e, x, r in rows
        ]

    async def close(self) -> None:
        """Close the connection (the leases stay until they expire or are released)."""
        await self._conn.close()

    async def _rows(self, sql: str, params: Mapping[str, object] | None) -> list[tuple[Any, ...]]:
        try:
            if self._conn.broken and self._conninfo:
                self._conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
            cursor = await self._conn.execute(sql, params)
            return await cursor.fetchall() if cursor.description else []
        except psycopg.Error as exc:
            first = " ".join(str(exc).split())
            raise JournalError(f"cannot reach the partition leases: {first}") from exc


async def check_fence(cursor: psycopg.AsyncCursor, owner: str, held: Mapping[int, int]) -> None:
    """In a commit's transaction: lock the leases of `held`'s partitions (partition -> the
    epoch we took it at), check them ours, and count the commit in `partition_commits`.

    FencedOut when another manager has taken one since (the transaction is rolled back).
    """
    partitions = list(held)
    epochs = [held[p] for p in partitions]
    await cursor.execute(_FENCE, {"partitions": partitions, "epochs": epochs, "owner": owner})
    for partition, owner, epoch in await cursor.fetchall():
        if epoch != held[partition]:
            raise FencedOut(
                f"partition {partition} was taken over by {owner} (epoch {epoch}; this manager "
                f"held it at epoch {held[partition]}): its lease was lost, so this manager "
                "writes nothing more for it and stops"
            )
