"""Joining the managers of a PostgreSQL journal: checking its partitions, holding leases."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from typing import Protocol

import psycopg

from manager.cluster.leases import LeaseTable, configure_partitions
from manager.cluster.ownership import Ownership
from manager.cluster.partitioning import Partitioning
from manager.errors import JournalError, ManagerError
from manager.journal.base import BaseJournal

__all__ = ["join", "keep_leases"]

log = logging.getLogger(__name__)


class Runner(Protocol):
    """What the lease keeper tells the orchestrator."""

    async def adopt(self, partitions: list[int]) -> None:
        """Run partitions just taken."""
        ...

    def lost(self, partitions: list[int]) -> None:
        """Partitions whose lease was lost: write nothing more for them."""
        ...


async def join(
    journal: BaseJournal, queue: str, partitions: int | None, lease_ttl_s: float
) -> Ownership | None:
    """Check the journal's partitions against `partitions`; when set, take what is free.

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
    ownership = Ownership(
        LeaseTable(conn, owner, lease_ttl_s, location.conninfo), Partitioning(queue, partitions)
    )
    await journal.fence(ownership.fence, lease_ttl_s)  # type: ignore[attr-defined]
    await ownership.take(partitions)
    log.info("manager %s of %d partitions; holds %d", owner, partitions, len(ownership.held))
    return ownership


async def keep_leases(ownership: Ownership, runner: Runner, renew_every_s: float) -> None:
    """Renew our leases and take free partitions, every `renew_every_s`, until cancelled."""
    while True:
        await asyncio.sleep(renew_every_s)
        lost = await ownership.renew()
        if lost:
            runner.lost(lost)
            return
        try:
            taken = await ownership.take(ownership.partitioning.count - len(ownership.held))
        except JournalError as exc:
            log.warning("cannot take free partitions now: %s", exc)
            continue
        try:
            await runner.adopt(taken)
        except ManagerError as exc:
            # Taken but not running: stop, so the leases expire and another manager runs them.
            runner.lost(taken)
            log.error("cannot run partitions %s: %s", taken, exc)
            return
