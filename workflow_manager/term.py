"""One term of the manager's pipeline: from opening the journal to stopping.

A term opens the journal, joins the cluster (with --partitions), connects to the broker and
starts the orchestrator, which recovers the running jobs from the journal. A manager without
partitions has one term: when its journal fails, it stops. A partitioned manager whose leases
are lost (paused longer than their time to live, taken over) or whose database went away ends
the term instead, and starts another as a standby: the same steps as a restart, in the same
process, with the HTTP API answering throughout (unhealthy until the new term runs).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from workflow_manager.config import Workflow
from workflow_manager.errors import BrokerError, FencedOut, JournalError
from workflow_manager.events import EventHub
from workflow_manager.events.publisher import EventPublisher
from workflow_manager.journal import is_postgres_url, open_journal
from workflow_manager.journal.base import BaseJournal
from workflow_manager.metrics import Metrics
from workflow_manager.observers import Observer
from workflow_manager.orchestrator import ManagerSettings, Orchestrator
from workflow_manager.transport import Broker

if TYPE_CHECKING:
    from workflow_manager.cluster.ownership import Ownership

__all__ = ["Term", "TermParts", "start_term", "rejoin", "rejoin_cause"]

log = logging.getLogger(__name__)

# Waits between attempts to start a new term while the database (or broker) is unreachable.
_REJOIN_WAITS_S = (0.5, 1.0, 2.0, 4.0)


class _NoLeases:
    """An unpartitioned manager's leases, for the metrics: none."""

    held: Mapping[int, int] = MappingProxyType({})
    renewal_s = 0.0


_NO_LEASES = _NoLeases()


@dataclass
class Term:
    """What one term runs: the journal, our leases, the broker, the orchestrator."""

    journal: BaseJournal
    ownership: Ownership | None
    orchestrator: Orchestrator
    publisher: EventPublisher | None
    leases: asyncio.Task[None] | None
    quotas: asyncio.Task[None] | None = None  # the limits that hold across the cluster

    @property
    def rejoins(self) -> bool:
        """True when a failure of this term is followed by another (a partitioned manager)."""
        return self.ownership is not None

    async def stop(self, events: EventHub) -> None:
        """Stop the orchestrator, then release our leases (after the journal's last commit:
        another manager may take them at once) and stop publishing run events."""
        if self.publisher is not None:
            await self.publisher.drain(timeout_s=2.0)
        for task in (self.quotas, self.leases):
            if task is not None:
                task.cancel()
                await asyncio.wait([task])  # off its connection before close() uses it
        await self.orchestrator.stop()
        if self.ownership is not None:
            try:
                # Bounded: unreleased leases expire on their own, a stop must not wait for them.
                await asyncio.wait_for(self.ownership.close(), self.ownership.table.ttl_s)
            except TimeoutError:
                log.warning("leases not released in time: they expire instead")
        if self.publisher is not None:
            events.remove_sink(self.publisher)
            await self.publisher.stop()


def rejoin_cause(failure: BaseException | None) -> str:
    """Why a term ended, as the rejoins metric labels it: lease (taken over, or not renewed in
    time), database (the journal failed) or error (anything else)."""
    if isinstance(failure, FencedOut):
        return "lease"
    return "database" if isinstance(failure, JournalError) else "error"


async def _join(
    db: str, journal: BaseJournal, settings: ManagerSettings, api_url: str
) -> Ownership | None:
    """Our partitions' leases when the journal is partitioned (SQLite never loads psycopg)."""
    if not is_postgres_url(db) and settings.partitions is None:
        return None
    from workflow_manager.cluster.member import join

    return await join(journal, settings.queue, settings.partitions, settings.lease_ttl_s, api_url)


@dataclass(frozen=True, slots=True)
class TermParts:
    """What every term of one process starts from: the workflows, the settings, the journal's
    location, our API's advertised URL, and the observers that outlive the terms."""

    workflows: Mapping[str, Workflow]
    settings: ManagerSettings
    db: str
    api_url: str
    metrics: Metrics
    events: EventHub
    observers: Sequence[Observer]


async def start_term(parts: TermParts) -> Term:
    """Open the journal, join, connect and recover; the term runs when this returns.

    Raises what stopped it (ManagerError: the journal, the partitions, the broker); whatever
    it opened is closed again.
    """
    workflows, settings, db, api_url = parts.workflows, parts.settings, parts.db, parts.api_url
    metrics, events = parts.metrics, parts.events
    journal = await open_journal(db)
    log.info("journal at %s", journal.where)  # a URL is shown without its password
    try:
        ownership = await _join(db, journal, settings, api_url)
    except BaseException:
        await journal.close()
        raise
    transport = Broker(settings.amqp_url, settings.prefetch)
    publisher = None
    if settings.events != "off":
        publisher = EventPublisher(transport, settings.queue, settings.events)
        events.add_sink(publisher)
    orchestrator = Orchestrator(
        workflows, settings, journal, transport, observers=parts.observers, ownership=ownership
    )
    metrics.watch(orchestrator)
    metrics.watch_leases(ownership or _NO_LEASES)
    metrics.watch_payloads(orchestrator.payloads.counts)
    journal.watch_commits(metrics.journal_committed)
    try:
        await orchestrator.start()
        if publisher is not None:
            await publisher.start()
    except BaseException:
        if publisher is not None:
            events.remove_sink(publisher)
        await transport.close()
        if ownership is not None:
            await ownership.close()
        await journal.close()
        raise
    leases = None
    if ownership is not None:
        from workflow_manager.cluster.member import keep_leases

        keeping = keep_leases(ownership, orchestrator, settings.lease_renew_s)
        leases = asyncio.create_task(keeping, name="leases")
    quotas = _keep_quotas(parts, journal, ownership, orchestrator)
    return Term(journal, ownership, orchestrator, publisher, leases, quotas)


def _keep_quotas(
    parts: TermParts, journal: BaseJournal, ownership: Ownership | None, orchestrator: Orchestrator
) -> asyncio.Task[None] | None:
    """The quota allocator's task, when this manager is partitioned and its workflows use a
    limit that holds across the cluster; else None (a single manager pays nothing)."""
    if ownership is None:
        return None
    from workflow_manager.cluster.quotas import QuotaAllocator, keep_quotas, uses_shared_limits

    if not uses_shared_limits(parts.workflows.values(), parts.settings):
        return None
    conninfo = journal.location.conninfo  # type: ignore[attr-defined]  # partitioned: PostgreSQL
    allocator = QuotaAllocator(orchestrator.pipeline, ownership, conninfo, orchestrator.now)
    return asyncio.create_task(keep_quotas(allocator, parts.settings.quota_tick_s), name="quotas")


async def rejoin(stop: asyncio.Event, parts: TermParts) -> Term | None:
    """Start a new term, again and again while the database or broker cannot be reached;
    None once `stop` is set first."""
    attempt = 0
    while not stop.is_set():
        try:
            term = await start_term(parts)
        except (JournalError, BrokerError) as exc:
            wait = _REJOIN_WAITS_S[min(attempt, len(_REJOIN_WAITS_S) - 1)]
            attempt += 1
            log.warning("cannot rejoin yet (again in %.1fs): %s", wait, exc)
            try:
                await asyncio.wait_for(stop.wait(), wait)
            except TimeoutError:
                continue
            return None
        held = term.ownership.held if term.ownership is not None else {}
        log.info("rejoined: running %d partitions", len(held))
        return term
    return None
