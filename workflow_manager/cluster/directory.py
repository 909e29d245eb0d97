"""Who runs each partition now, and where its HTTP API answers: the lease table's live owners
joined with the members' advertised URLs, read at most once a second (the API asks it for
every request about another manager's job, and a lease moves rarely)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from workflow_manager.cluster.view import Lease, Member

__all__ = ["Directory", "Peer"]

MAX_AGE_S = 1.0


class ClusterTable(Protocol):
    """The reads the directory needs of the lease table
    (workflow_manager.cluster.leases.LeaseTable)."""

    async def leases(self) -> list[Lease]:
        """Every partition's lease."""
        ...

    async def members(self) -> Sequence[Member]:
        """The managers alive now."""
        ...


@dataclass(frozen=True, slots=True)
class Peer:
    """A manager (one holding a partition's live lease, say) and its API's URL (None: it
    advertises none)."""

    name: str
    api_url: str | None


class Directory:
    """The owner of each partition as the database had it at most `max_age_s` ago, for the
    manager named `this_manager`."""

    def __init__(
        self,
        table: ClusterTable,
        this_manager: str,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._table = table
        self.this_manager = this_manager
        self._max_age_s = max_age_s
        self._clock = clock
        self._owners: dict[int, Peer] = {}
        self._others: list[Peer] = []
        self._count = 0
        self._read_at: float | None = None

    async def owner_of(self, partition: int) -> Peer | None:
        """The manager running `partition` now; None while no one holds its lease.

        Raises JournalError when the database cannot be read.
        """
        await self._read()
        return self._owners.get(partition)

    async def owners(self) -> dict[int, Peer]:
        """The manager running each partition held now (JournalError as `owner_of`)."""
        await self._read()
        return dict(self._owners)

    async def partitions(self) -> int:
        """How many partitions the jobs are split into (JournalError as `owner_of`)."""
        await self._read()
        return self._count

    async def others(self) -> list[Peer]:
        """The other managers alive now that advertise their API, by name (JournalError as
        `owner_of`)."""
        await self._read()
        return self._others

    async def _read(self) -> None:
        now = self._clock()
        if self._read_at is None or now - self._read_at > self._max_age_s:
            members = await self._table.members()
            leases = await self._table.leases()  # one row per partition, held or not
            self._owners = _owners(leases, members)
            self._count = len(leases)
            self._others = [
                Peer(m.name, m.api_url)
                for m in sorted(members, key=lambda m: m.name)
                if m.name != self.this_manager and m.api_url is not None
            ]
            self._read_at = now

    def forget(self) -> None:
        """Read the database again next time (an owner could not be reached: it may have moved)."""
        self._read_at = None


def _owners(leases: Sequence[Lease], members: Sequence[Member]) -> dict[int, Peer]:
    urls = {member.name: member.api_url for member in members}
    return {
        lease.partition: Peer(lease.owner, urls.get(lease.owner))
        for lease in leases
        if lease.owner is not None and lease.expires_in_s > 0
    }
