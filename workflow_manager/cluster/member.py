"""Joining the managers of a PostgreSQL journal: checking its partitions, holding leases."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from typing import Protocol

import psycopg

from workflow_manager.cluster.balance import share, to_give
from workflow_manager.cluster.leases import LeaseTable, configure_partitions
from workflow_manager.cluster.ownership import Ownership
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.errors import JournalError, ManagerError
from workflow_manager.journal.base import BaseJournal

__all__ = ["join", "keep_leases"]

log = logging.getLogger(__name__)


class Runner(Protocol):
    """What the lease keeper tells the orchestrator."""

    async def adopt(self, partitions: list[int]) -> None:
        """Run partitions just taken."""
        ...

    async def release(self, partitions: list[int]) -> None:
        """Hand partitions over: stop taking their work, finish what is in hand, forget them."""
        ...

    def lost(self, partitions: list[int]) -> None:
        """Partitions whose lease was lost: write nothing more for them."""
        ...


async def join(
    journal: BaseJournal,
    queue: str,
    partitions: int | None,
    lease_ttl_s: float,
    api_url: str | None = None,
) -> Ownership | None:
    """Check the journal's partitions against `partitions`; when set, join the managers (at
    `api_url`) and take our share of the free partitions.

    None for an unpartitioned manager (SQLite, or PostgreSQL without --partitions). A
    ManagerError says why the manager cannot start (another number, no PostgreSQL).
    """
    location = getattr(journal, "location", None)
    if location is None:
        if partitions is not None:
            raise ManagerError(
                f"--partitions {partitions} needs the journal in PostgreSQL "
                "(--db postgresql://USER@HOST/DB): several managers share it there"
            )
        return None
    try:
        conn = await psycopg.AsyncConnection.connect(location.conninfo, autocommit=True)
        await configure_partitions(conn, partitions)
    except psycopg.Error as exc:
        raise JournalError(f"cannot read the partitions of {location}: {exc}") from exc
    if partitions is None:
        await conn.close()
        return None
    owner = f"{socket.gethostname()}:{os.getpid()}"
    table = LeaseTable(conn, owner, lease_ttl_s, location.conninfo, api_url)
    ownership = Ownership(table, Partitioning(queue, partitions))
    await journal.fence(ownership.fence, lease_ttl_s)  # type: ignore[attr-defined]
    await table.heartbeat()
    await ownership.take(await _share(ownership))
    log.info("manager %s of %d partitions; holds %d", owner, partitions, len(ownership.held))
    return ownership


async def _share(ownership: Ownership) -> int:
    """How many partitions we should run, with the managers alive now."""
    members = [member.name for member in await ownership.table.members()]
    return share(ownership.partitioning.count, members, ownership.owner)


async def keep_leases(ownership: Ownership, runner: Runner, renew_every_s: float) -> None:
    """Every `renew_every_s` until cancelled: renew our leases, say we are alive, and move
    towards our share of the partitions (hand the extra over, or take free ones)."""
    while True:
        await asyncio.sleep(renew_every_s)
        lost = await ownership.renew()
        if lost:
            runner.lost(lost)
            return
        try:
            await ownership.table.heartbeat()
            goal = await _share(ownership)
        except JournalError as exc:
            log.warning("cannot reach the cluster's members now: %s", exc)
            continue
        try:
            await _rebalance(ownership, runner, goal)
        except JournalError as exc:
            log.warning("cannot rebalance partitions now: %s", exc)
        except ManagerError as exc:
            # Taken but not running: stop, so the leases expire and another manager runs them.
            runner.lost(sorted(ownership.held))
            log.error("cannot run partitions: %s", exc)
            return


async def _rebalance(ownership: Ownership, runner: Runner, goal: int) -> None:
    """Hand over the partitions above `goal`, or take free ones up to it."""
    extra = to_give(ownership.held, goal)
    if extra:
        ownership.giving.update(extra)
        log.info("handing partitions %s over (share %d)", extra, goal)
        await runner.release(extra)
        await ownership.release(extra)
        return
    taken = await ownership.take(goal - len(ownership.held))
    await runner.adopt(taken)
