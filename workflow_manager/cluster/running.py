"""Several managers: the orchestrator's side of running some of the partitions.

`PartitionRuns` takes partitions over (`adopt`, the recovery of a start for those partitions
alone), hands them over (`release`), stops when their leases are lost (`lost`), and consumes
each partition's queue (its deliveries go to `Deliveries.on_partition`). Whose a job tree is,
and where a new job goes, is `workflow_manager.cluster.ours`. The memory it changes changes
through the pipeline's named methods (`Pipeline.replay_for_adoption`, `hand_over`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workflow_manager.cluster.partitioning import partition_queue
from workflow_manager.cluster.view import UNPARTITIONED, cluster_json
from workflow_manager.engine.bulk import bulk_journal_id
from workflow_manager.errors import FencedOut
from workflow_manager.transport import Delivery

if TYPE_CHECKING:
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.deliveries import Deliveries
    from workflow_manager.inflight import InFlight
    from workflow_manager.journal import Journal
    from workflow_manager.outbox import Outbox
    from workflow_manager.pipeline import Pipeline
    from workflow_manager.recovery import Recovery
    from workflow_manager.scheduler import Scheduler
    from workflow_manager.settings import ManagerSettings
    from workflow_manager.transport import Transport

__all__ = ["PartitionRuns"]

log = logging.getLogger(__name__)


class PartitionRuns:
    """The orchestrator's partitions: taken over, handed over, lost; their queues consumed."""

    def __init__(
        self,
        pipeline: Pipeline,
        recovery: Recovery,
        deliveries: Deliveries,
        work: InFlight,
        settings: ManagerSettings,
        journal: Journal,
        transport: Transport,
        outbox: Outbox,
        schedules: Scheduler,
        clock: Callable[[], float],
        ownership: Ownership | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._recovery = recovery
        self._deliveries = deliveries
        self._work = work
        self._settings = settings
        self._journal = journal
        self._transport = transport
        self._outbox = outbox
        self._schedules = schedules
        self._now = clock
        self._ownership = ownership
        # The deliveries of each partition being handled now (a hand-over waits for those).
        self._handling: dict[int, int] = {}
        self._handled = asyncio.Event()

    def __repr__(self) -> str:
        return f"<PartitionRuns running={sorted(self._pipeline.partitions)}>"

    async def consume_held(self) -> None:
        """At a start: the partitions held are in memory (recovered); consume their queues."""
        assert self._ownership is not None
        self._pipeline.adopted(self._ownership.held)
        for partition in sorted(self._ownership.held):
            await self._consume_partition(partition)

    async def adopt(self, partitions: list[int]) -> None:
        """Run partitions just taken (a failover, a hand-over): count their rate windows'
        recent starts, replay their running jobs, publish their unconfirmed messages, arm
        their timers, consume their queue, and fire what their schedules' firings missed
        meanwhile."""
        if not partitions:
            return
        assert self._ownership is not None
        taken = set(partitions)
        # Firings due while no manager ran these partitions (a hand-over, a failover: a lease
        # lives lease_ttl_s, then waits up to a renewal to be taken) are fired below; those
        # after the cluster was down are left to the catch-up rule of a start.
        taken_at = self._now()
        within = 2 * (self._settings.lease_ttl_s + self._settings.lease_renew_s)
        unrun = self._ownership.unrun_for(partitions, within)
        roots = await self._recovery.running_roots(taken)
        recalled = await self._recovery.recalled(self._now(), taken)
        history = await self._recovery.rate_history(self._now(), taken)
        rows = await self._recovery.rows_to_replay(roots, taken)  # their bulks under way too
        self._pipeline.replay_for_adoption(rows, recalled, history)
        await self._work.tracked(self._outbox.publish_pending)(await self._recovery.pending(taken))
        self._pipeline.arm_timers()
        self._pipeline.adopted(partitions)
        for partition in partitions:
            await self._consume_partition(partition)
        log.info("running partitions %s (%d running jobs taken over)", partitions, len(roots))
        if unrun is not None:
            await self._schedules.fire_missed(taken_at - unrun)

    async def release(self, partitions: list[int]) -> None:
        """Hand partitions over (balancing): stop consuming their queues, finish the
        deliveries in hand, let their publishes be confirmed, then forget their jobs. The
        lease keeper has stopped anything new of theirs starting here (`Ownership.giving`) and
        releases their leases once this returns."""
        assert self._ownership is not None
        gone = set(partitions)
        for partition in partitions:
            await self._transport.stop_consuming(partition_queue(self._settings.queue, partition))
        while any(self._handling.get(p) for p in gone):
            self._handled.clear()
            await self._handled.wait()
        # No await from here on: a delivery that starts later finds the partition not running.
        of = self._ownership.partitioning.of
        roots = tuple(
            job.id
            for job in self._pipeline.state.jobs.values()
            if job.parent is None and of(job.id, job.partition) in gone
        )
        # Their bulks under way too (each filed in one partition): the next owner goes on.
        bulks = tuple(
            key for key in map(bulk_journal_id, self._pipeline.state.bulks) if of(key) in gone
        )
        self._pipeline.hand_over(gone, roots + bulks)
        queues = {partition_queue(self._settings.queue, p) for p in gone}
        try:
            # Bounded: the lease must be renewed meanwhile; a request not confirmed by then is
            # published again by the next owner (a worker may see it twice, as after a crash).
            await asyncio.wait_for(self._outbox.quiet(queues), self._ownership.table.ttl_s / 3)
        except TimeoutError:
            log.warning("partitions %s handed over with publishes unconfirmed", partitions)
        self._outbox.flush()
        await self._journal.flush()  # the sent marks, before another manager reads them
        log.info("handed partitions %s over (%d running jobs)", partitions, len(roots))

    def lost(self, partitions: list[int]) -> None:
        """Leases lost (not renewed in time, or taken over): stop at once; the fence already
        refuses every commit for them. The manager rejoins as a standby (workflow_manager.term)."""
        self._work.fail(
            FencedOut(
                f"lost the lease of partitions {', '.join(map(str, partitions))}: this manager "
                "stops taking their work"
            )
        )

    async def cluster(self) -> dict[str, Any]:
        """The partitions, their leases and the managers running them (GET /api/cluster)."""
        if self._ownership is None:
            return dict(UNPARTITIONED)
        table = self._ownership.table
        return cluster_json(await table.leases(), await table.members(), table.owner)

    async def _consume_partition(self, partition: int) -> None:
        queue = partition_queue(self._settings.queue, partition)
        running = self._pipeline.partitions  # a live view
        on_partition = self._deliveries.on_partition

        async def handle(delivery: Delivery) -> None:
            if partition not in running:
                # Handed over while this delivery was on its way: the next owner takes it.
                self._transport.requeue(delivery)
                return
            self._handling[partition] = self._handling.get(partition, 0) + 1
            try:
                await on_partition(delivery)
            finally:
                self._handling[partition] -= 1
                self._handled.set()

        await self._transport.consume(queue, self._work.tracked(self._deliveries.guarded(handle)))
