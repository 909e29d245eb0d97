"""Several managers: the orchestrator's side of running some of the partitions.

`PartitionRuns` is a part of `workflow_manager.orchestrator.Orchestrator`: take partitions over
(`adopt`, the recovery of a start for those partitions alone), hand them over (`release`), stop
when their leases are lost (`lost`); consume each partition's queue, and hand a trigger or
signal of another manager's partition to that partition's queue
(`workflow_manager.cluster.handoff`); answer whether a job tree is ours (`NotOwner` when not) and
where a new job goes. Unpartitioned (`ownership` None), each answers at once: everything is ours.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any

from workflow_manager.cluster import handoff
from workflow_manager.cluster.partitioning import partition_queue
from workflow_manager.cluster.view import UNPARTITIONED, cluster_json
from workflow_manager.engine import (
    EngineState,
    JobsHandedOver,
    JobSubmitted,
    apply,
    canonical_uuid,
    replay,
)
from workflow_manager.errors import FencedOut, NotOwner
from workflow_manager.recorder import to_event
from workflow_manager.transport import Delivery

if TYPE_CHECKING:
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.cluster.placement import Placement
    from workflow_manager.engine import Command
    from workflow_manager.journal import EventRow, Journal
    from workflow_manager.observers import Observer
    from workflow_manager.outbox import Outbox
    from workflow_manager.scheduler import Scheduler
    from workflow_manager.settings import ManagerSettings
    from workflow_manager.timekeeper import Timekeeper
    from workflow_manager.transport import Outbound, Transport

__all__ = ["PartitionRuns"]

log = logging.getLogger(__name__)


class PartitionRuns:
    """The orchestrator's partitions: taken over, handed over, lost; their queues consumed;
    which job trees are ours."""

    # What this uses of the Orchestrator it is a part of (set there, or by ApiRequests).
    settings: ManagerSettings
    journal: Journal
    transport: Transport
    ownership: Ownership | None
    schedules: Scheduler
    now: Callable[[], float]
    new_id: Callable[[], str]
    _state: EngineState
    _placement: Placement | None
    _observers: tuple[Observer, ...]
    _outbox: Outbox
    _timers: Timekeeper
    # The partitions whose jobs are in memory, and the deliveries of each being handled now
    # (a hand-over waits for those to finish).
    _running: set[int]
    _handling: dict[int, int]
    _handled: asyncio.Event
    _fail: Callable[[BaseException], None]
    _tracked: Callable[[Callable[[Any], Any]], Callable[[Any], Any]]
    _guarded: Callable[[Callable[[Delivery], Awaitable[None]]], Callable[[Any], Any]]
    _running_roots: Callable[[set[int] | None], Awaitable[list[str]]]
    _rows_to_replay: Callable[[list[str]], Awaitable[list[EventRow]]]
    _pending: Callable[[set[int] | None], Awaitable[list[Outbound]]]
    _carry_out: Callable[[Command], None]
    on_reply: Callable[[Delivery], Awaitable[None]]
    on_trigger: Callable[[Delivery], Awaitable[None]]
    on_signal: Callable[[Delivery], Awaitable[None]]

    async def adopt(self, partitions: list[int]) -> None:
        """Run partitions just taken (a failover, a hand-over): replay their running jobs,
        publish their unconfirmed messages, arm their timers, consume their queue, and fire
        what their schedules' firings missed meanwhile."""
        if not partitions:
            return
        assert self.ownership is not None
        taken = set(partitions)
        # Firings due while no manager ran these partitions (a hand-over, a failover: a lease
        # lives lease_ttl_s, then waits up to a renewal to be taken) are fired below; those
        # after the cluster was down are left to the catch-up rule of a start.
        taken_at = self.now()
        within = 2 * (self.settings.lease_ttl_s + self.settings.lease_renew_s)
        unrun = self.ownership.unrun_for(partitions, within)
        roots = await self._running_roots(taken)
        replay(self._state, map(to_event, await self._rows_to_replay(roots)))
        for observer in self._observers:
            observer.recovered(self._state.jobs.values())
        await self._tracked(self._outbox.publish_pending)(await self._pending(taken))
        for key, due_at in self._state.timers.items():
            self._timers.arm(key, due_at)
        self._running.update(partitions)
        for partition in partitions:
            await self._consume_partition(partition)
        log.info("running partitions %s (%d running jobs taken over)", partitions, len(roots))
        if unrun is not None:
            await self.schedules.fire_missed(taken_at - unrun)

    async def release(self, partitions: list[int]) -> None:
        """Hand partitions over (balancing): stop consuming their queues, finish the
        deliveries in hand, let their publishes be confirmed, then forget their jobs. The
        lease keeper has stopped anything new of theirs starting here (`Ownership.giving`) and
        releases their leases once this returns."""
        assert self.ownership is not None
        gone = set(partitions)
        for partition in partitions:
            await self.transport.stop_consuming(partition_queue(self.settings.queue, partition))
        while any(self._handling.get(p) for p in gone):
            self._handled.clear()
            await self._handled.wait()
        # No await from here on: a delivery that starts later finds the partition not running.
        self._running -= gone
        of = self.ownership.partitioning.of
        roots = tuple(
            job.id
            for job in self._state.jobs.values()
            if job.parent is None and of(job.id, job.partition) in gone
        )
        _, commands = apply(self._state, JobsHandedOver(roots, self.now()))
        for command in commands:
            self._carry_out(command)
        for observer in self._observers:
            observer.observe(commands)  # JobsReleased: streams following those jobs end
            observer.recovered(self._state.jobs.values())
        queues = {partition_queue(self.settings.queue, p) for p in gone}
        try:
            # Bounded: the lease must be renewed meanwhile; a request not confirmed by then is
            # published again by the next owner (a worker may see it twice, as after a crash).
            await asyncio.wait_for(self._outbox.quiet(queues), self.ownership.table.ttl_s / 3)
        except TimeoutError:
            log.warning("partitions %s handed over with publishes unconfirmed", partitions)
        self._outbox.flush()
        await self.journal.flush()  # the sent marks, before another manager reads them
        log.info("handed partitions %s over (%d running jobs)", partitions, len(roots))

    def lost(self, partitions: list[int]) -> None:
        """Leases lost (not renewed in time, or taken over): stop at once; the fence already
        refuses every commit for them. The manager rejoins as a standby (workflow_manager.term)."""
        self._fail(
            FencedOut(
                f"lost the lease of partitions {', '.join(map(str, partitions))}: this manager "
                "stops taking their work"
            )
        )

    async def cluster(self) -> dict[str, Any]:
        """The partitions, their leases and the managers running them (GET /api/cluster)."""
        if self.ownership is None:
            return dict(UNPARTITIONED)
        table = self.ownership.table
        return cluster_json(await table.leases(), await table.members(), table.owner)

    async def _consume_partition(self, partition: int) -> None:
        queue = partition_queue(self.settings.queue, partition)

        async def handle(delivery: Delivery) -> None:
            if partition not in self._running:
                # Handed over while this delivery was on its way: the next owner takes it.
                self.transport.requeue(delivery)
                return
            self._handling[partition] = self._handling.get(partition, 0) + 1
            try:
                await self.on_partition(delivery)
            finally:
                self._handling[partition] -= 1
                self._handled.set()

        await self.transport.consume(queue, self._tracked(self._guarded(handle)))

    async def on_partition(self, delivery: Delivery) -> None:
        """A delivery of one of our partitions' queues: a reply, or a trigger or signal that
        another manager handed over."""
        kind = handoff.handoff_kind(delivery)
        if kind == handoff.TRIGGER:
            await self.on_trigger(delivery)
        elif kind == handoff.SIGNAL:
            await self.on_signal(delivery)
        else:
            await self.on_reply(delivery)

    async def _hand_over(
        self, delivery: Delivery, partition: int, kind: str, job_id: str | None
    ) -> None:
        """Send a trigger or signal to its partition's queue, for the owner; then ack it."""
        queue = partition_queue(self.settings.queue, partition)
        log.debug("%s handed over to %s", kind, queue)
        await self._outbox.publish([handoff.handed_over(delivery, queue, kind, job_id)])
        self.transport.ack(delivery)

    def _new_job_id(self) -> str:
        """A new job id; partitioned, one in a partition of ours when we run any."""
        if self.ownership is None:
            return self.new_id()
        drawn = self.ownership.partitioning.new_id_in(self._runs_now(), self.new_id)
        return drawn if drawn is not None else self.new_id()

    def _runs_now(self) -> set[int]:
        """The partitions whose work is handled here now: their jobs are in memory and they
        are not being handed over. Not `Ownership.running`: a partition just taken is held
        before its adoption has replayed its jobs, and a trigger or signal for it meanwhile
        would not find them (a trigger redelivered after its manager died would start its job
        a second time, or be answered with the journal's `running`); it goes to the partition's
        queue instead, which is consumed once the adoption is done."""
        assert self.ownership is not None
        return self._running - self.ownership.giving

    def _require_owner(self, root_id: str, placed: int | None = None) -> None:
        """NotOwner (the API asks that manager instead) for a job tree another manager runs
        (placed in `placed`, else by its id)."""
        if not self._owns(root_id, placed):
            assert self.ownership is not None
            partition = self.ownership.partitioning.of(root_id, placed)
            raise NotOwner(
                f"job {root_id} is in partition {partition}, which another manager runs",
                partition,
            )

    async def _placed(self, event: JobSubmitted, named: bool) -> JobSubmitted:
        """`event` with the partition its job goes to (`Placement.place`); unpartitioned, as is."""
        return event if self._placement is None else await self._placement.place(event, named)

    async def _in_partitions(
        self, roots: Collection[str], partitions: set[int] | None
    ) -> list[str]:
        """Those of the top-level jobs `roots` in our partitions (or in `partitions`)."""
        assert self.ownership is not None and self._placement is not None
        wanted = partitions if partitions is not None else set(self.ownership.held)
        return await self._placement.select(roots, wanted)

    def _owns(self, root_id: str, placed: int | None = None) -> bool:
        """True when the job tree `root_id` (placed in `placed`, else by its id) is ours to run
        (always, unpartitioned)."""
        if self.ownership is None:
            return True
        return self.ownership.partitioning.of(root_id, placed) in self._runs_now()

    async def _foreign_partition(self, job_id: str) -> int | None:
        """The partition of `job_id`'s tree when another manager runs it; None when we do."""
        if self.ownership is None or job_id in self._state.jobs:
            return None
        assert self._placement is not None
        partition = await self._placement.partition_of(canonical_uuid(job_id) or job_id)
        return None if partition in self._runs_now() else partition
