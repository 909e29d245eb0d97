"""The driver: the parts that take each message through the pipeline, wired, started and stopped.

    transport ─▶ intake ─▶ engine ─▶ recorder ─▶ journal ─▶ outbox ─▶ transport
    (Delivery)   (event)   (commands) (rows, messages) (commit) (publish, confirm)

For each event (a delivery read by `workflow_manager.intake`, a request from the API, a timer):
apply it, record its commands as a journal batch and outbound messages, append the batch, and
publish the messages once it is committed (or while it commits, when a crash would make the
very same messages again). A crash at any point loses nothing: an unacked message is
redelivered (and the engine ignores what it has seen), an unconfirmed outbound message is
published again by recovery, which replays the journal of the running jobs through the same
engine.

`Orchestrator` holds the parts and does no stage's work itself:
- `Pipeline` (`workflow_manager.pipeline`): one event through the stages, the barrier, and
  memory (every change of it outside an event is one of its named methods);
- `Deliveries` (`workflow_manager.deliveries`): the queues' handlers, which call the pipeline;
- `ApiRequests` (`workflow_manager.requests`): the API's requests, which call the pipeline;
- `PartitionRuns` (`workflow_manager.cluster.running`) and `OurTrees`
  (`workflow_manager.cluster.ours`): several managers' partitions;
- `Recovery` (`workflow_manager.recovery`), `InFlight` (`workflow_manager.inflight`),
  `Scheduler`, `Outbox`.
It starts and stops them, keeps retention, and is the handle the API and the server hold.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workflow_manager.bulkactions import BulkRunner, JobFilter
from workflow_manager.cluster.bulkparts import MatchedJob
from workflow_manager.cluster.directory import Directory
from workflow_manager.cluster.ours import OurTrees
from workflow_manager.cluster.placement import Placement
from workflow_manager.cluster.running import PartitionRuns
from workflow_manager.config import Workflow
from workflow_manager.config.schedules import Schedule
from workflow_manager.deliveries import Deliveries
from workflow_manager.engine import EngineState, Job
from workflow_manager.errors import JournalError
from workflow_manager.inflight import InFlight
from workflow_manager.journal import JobHistory, JobRow, Journal
from workflow_manager.observers import Observer
from workflow_manager.outbox import Outbox
from workflow_manager.payloads.stage import PayloadRefs
from workflow_manager.pipeline import Pipeline
from workflow_manager.recovery import Recovery
from workflow_manager.requests import ApiRequests
from workflow_manager.scheduler import Scheduler
from workflow_manager.settings import ManagerSettings, step_queues
from workflow_manager.traces import TraceParent
from workflow_manager.transport import Transport, manager_queues, signal_queue, trigger_queue

if TYPE_CHECKING:
    from payload_refs import PayloadStore
    from workflow_manager.cluster.ownership import Ownership

__all__ = ["ManagerSettings", "Orchestrator", "step_queues"]

log = logging.getLogger(__name__)

_DAY_S = 86_400.0


class Orchestrator:
    """Runs jobs: wires the pipeline and the parts that call it; starts, stops, keeps retention.

    The API's requests are `requests` (`ApiRequests`), the partitions of several managers
    `partitions` (`PartitionRuns`); the methods below that the API and the lease keeper call
    hand over to them.
    """

    def __init__(
        self,
        workflows: Mapping[str, Workflow],
        settings: ManagerSettings,
        journal: Journal,
        transport: Transport,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        observers: Sequence[Observer] = (),
        ownership: Ownership | None = None,
    ) -> None:
        self.workflows = dict(workflows)
        self.settings = settings
        # Payloads by reference: the stage between intake and the pipeline, and its store by
        # name (--payload-store), which the API serves values from.
        workflow_of = lambda job_id: getattr(self.state.jobs.get(job_id), "workflow", None)  # noqa: E731
        self.payloads = PayloadRefs.from_settings(settings, self.workflows, workflow_of, clock)
        self.payload_stores: dict[str, PayloadStore] = self.payloads.stores
        self.journal = journal
        self.transport = transport
        self.now = clock
        self.new_id = new_id
        # Partitioned (several managers on one PostgreSQL journal): only our partitions' jobs.
        self.ownership = ownership
        # Who runs the other partitions, for the API to ask about their jobs.
        self.directory = None if ownership is None else Directory(ownership.table, ownership.owner)
        self._work = InFlight()
        self._outbox = Outbox(
            transport, journal, clock, self._work.fail, settings.publish_retry_s,
            by_reply_queue=ownership is not None,
        )  # fmt: skip
        # Rows of jobs that ended, until their batch is committed: they may have left memory.
        ended: dict[str, JobRow] = {}
        placement = (
            None
            if ownership is None
            else Placement(ownership.partitioning, journal, lambda: self.pipeline.state, ended)
        )
        self._recovery = Recovery(self.workflows, settings, journal, ownership, placement)
        reply_queue = settings.queue if ownership is None else ownership.partitioning.reply_queue
        self.pipeline = Pipeline(
            journal, self._outbox, self._recovery, self._work, clock, observers, reply_queue,
            ended, partitioned=ownership is not None,
        )  # fmt: skip
        trees = OurTrees(self.pipeline, ownership, placement, new_id)
        self.requests = ApiRequests(
            self.pipeline, trees, self.workflows, settings, journal, clock, ownership,
            self.payloads,
        )  # fmt: skip
        self.bulks = BulkRunner(
            self.pipeline, self.requests, journal, clock,
            None if ownership is None else ownership.partitioning,
        )  # fmt: skip
        self.deliveries = Deliveries(
            self.pipeline, trees, self.requests, settings, journal, transport, self._outbox,
            clock, self.payloads, observers, partitioned=ownership is not None,
        )  # fmt: skip
        self.schedules = Scheduler(self.requests.schedules, clock)
        self.partitions = PartitionRuns(
            self.pipeline, self._recovery, self.deliveries, self._work, settings, journal,
            transport, self._outbox, self.schedules, clock, ownership,
        )  # fmt: skip
        self._retention: list[asyncio.Task[None]] = []

    def __repr__(self) -> str:
        jobs = self.pipeline.state.jobs
        running = sum(job.is_running for job in jobs.values())
        return f"<Orchestrator queue={self.settings.queue} jobs={len(jobs)} running={running}>"

    @property
    def history(self) -> JobHistory:
        """The journal's reads for browsing jobs (the API's lists and job pages)."""
        return self.journal

    @property
    def state(self) -> EngineState:
        """The engine state: every job in memory by id. Read it; never change it from outside."""
        return self.pipeline.state

    @property
    def failed(self) -> asyncio.Event:
        """Set once the manager stops taking work (its journal failed, a lease was lost)."""
        return self._work.failed

    @property
    def failure(self) -> BaseException | None:
        """Why the manager stopped taking work, or None."""
        return self._work.failure

    @property
    def connected(self) -> bool:
        """True while the broker connection is up, with the manager's consumers in place."""
        return self.transport.connected

    @property
    def disconnected_for_s(self) -> float | None:
        """Seconds since the broker connection was lost, or None while connected."""
        return self.transport.down_for_s

    @property
    def publishes_pending(self) -> int:
        """Publishes sent and not yet confirmed, or waiting for the broker to be back."""
        return self._outbox.pending

    # -- life cycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Recover from the journal, connect, publish what was pending, then start consuming."""
        started = time.perf_counter()
        await self._recovery.save_definitions()
        await self.pipeline.recover()
        pending = await self._recovery.pending()
        await self.transport.connect()
        queue = self.settings.queue
        partitions = self.ownership.partitioning.queues() if self.ownership else []
        await self.transport.declare(
            [*manager_queues(queue), *partitions, *step_queues(self.workflows.values())]
        )
        await self._outbox.publish(pending)
        self.transport.watch(self._restored)
        self.pipeline.arm_timers()
        tracked, guarded, deliveries = self._work.tracked, self.deliveries.guarded, self.deliveries
        if self.ownership is None:
            await self.transport.consume(queue, tracked(guarded(deliveries.on_reply)))
        else:
            await self.partitions.consume_held()
        await self.transport.consume(trigger_queue(queue), tracked(guarded(deliveries.on_trigger)))
        await self.transport.consume(signal_queue(queue), tracked(guarded(deliveries.on_signal)))
        self._retention.append(asyncio.create_task(self._keep_retention(), name="retention"))
        if sweeps := self.payloads.retention(journal=self.journal, state=lambda: self.state):
            self._retention.append(asyncio.create_task(sweeps.run(), name="payload-retention"))
        await self.schedules.start()
        self.bulks.resume()  # those under way when the manager stopped go on
        log.info(
            "consuming replies on '%s' and triggers on '%s' (%d running jobs recovered, "
            "%d messages re-published, ready in %.2fs)",
            queue, trigger_queue(queue), len(self.pipeline.state.jobs), len(pending),
            time.perf_counter() - started,
        )  # fmt: skip

    async def stop(self) -> None:
        """Stop consuming, finish the messages in hand, then close the connection and journal."""
        for task in self._retention:
            task.cancel()
        self.schedules.close()
        await self.bulks.stop()
        self.pipeline.close()
        await self.transport.stop_consuming()
        await self._work.idle()
        await self.transport.close()
        self._outbox.flush()
        try:
            await self.journal.close()
        except JournalError as exc:
            self._work.fail(exc)
        await self.payloads.close()
        log.info("stopped")

    async def _restored(self) -> None:
        """After a reconnect: publish what the journal holds as unconfirmed.

        aio-pika cancels the handlers in flight when the connection drops; one cancelled
        after its commit leaves its messages journaled but unpublished, until now.
        """
        await self._work.tracked(self._outbox.publish_pending)(await self._recovery.pending())

    # -- retention ---------------------------------------------------------------------

    async def prune(self) -> int:
        """Delete finished jobs older than the retention period; returns how many went."""
        cutoff = self.now() - self.settings.retention_days * _DAY_S
        total = 0
        while (deleted := await self.journal.delete_finished(cutoff)) > 0:
            total += deleted
        if total:
            log.info("retention: deleted %d finished jobs", total)
        return total

    async def _keep_retention(self) -> None:
        """Prune now and then, for as long as the manager runs."""
        while True:
            try:
                await self.prune()
            except JournalError as exc:
                self._work.fail(exc)
                return
            await asyncio.sleep(self.settings.retention_every_s)

    # -- the API's requests (`ApiRequests`) and the lease keeper's (`PartitionRuns`) ------

    async def submit(
        self,
        workflow: str,
        payload: Any,
        job_id: str | None = None,
        trace: TraceParent | None = None,
        priority: int = 0,
        *,
        not_before: float | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        """Start a job; returns its id or raises a SubmitError (`ApiRequests.submit`)."""
        return await self.requests.submit(
            workflow, payload, job_id, trace, priority, not_before=not_before, meta=meta
        )

    async def find_job(self, job_id: str, *, replay_foreign: bool = False) -> Job | None:
        """A job in memory, or a finished one from the journal (`ApiRequests.find_job`)."""
        return await self.requests.find_job(job_id, replay_foreign=replay_foreign)

    async def finished_row(self, job_id: str) -> JobRow | None:
        """The journal row of a job that has ended and left memory, if `job_id` names one."""
        return await self.requests.finished_row(job_id)

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level jobs of a workflow by status (finished ones since `finished_since`)."""
        return await self.requests.workflow_jobs(name, finished_since)

    async def cancel(self, job_id: str) -> Job:
        """Cancel a scheduled or running job (`ApiRequests.cancel`)."""
        return await self.requests.cancel(job_id)

    async def retry(self, job_id: str) -> Job:
        """Run a failed job again from where it failed (`ApiRequests.retry`)."""
        return await self.requests.retry(job_id)

    async def pause(self, job_id: str, paused: bool) -> Job:
        """Pause a running job, or resume a paused one (`ApiRequests.pause`)."""
        return await self.requests.pause(job_id, paused)

    async def fork(
        self,
        source_id: str,
        step: str,
        *,
        input: dict[str, Any] | None = None,
        definition: str = "current",
        children: str = "failed",
        job_id: str | None = None,
    ) -> str:
        """Fork a finished job from `step` (`ApiRequests.fork`); returns the new job's id."""
        return await self.requests.fork(
            source_id, step, input=input, definition=definition, children=children,
            job_id=job_id,
        )  # fmt: skip

    async def bulk(
        self,
        action: str,
        jobs: JobFilter,
        params: dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> tuple[str | None, list[str]]:
        """Journal a bulk action on the jobs `jobs` matches and carry it out in the background
        (`BulkRequests.bulk`); returns its id (None for a dry run) and the jobs matched."""
        bulk_id, matched = await self.requests.bulks.bulk(action, jobs, params, dry_run=dry_run)
        if bulk_id is not None:
            self.bulks.start(bulk_id)
        return bulk_id, matched

    async def bulk_status(self, bulk_id: str) -> dict[str, Any] | None:
        """Where a bulk action stands (`BulkRequests.bulk_status`); None if there is none."""
        return await self.requests.bulks.bulk_status(bulk_id)

    async def bulk_matches(
        self, jobs: JobFilter, *, ended: bool
    ) -> tuple[list[MatchedJob], list[int]]:
        """Partitioned: the jobs in memory `jobs` matches, and the partitions run here
        (`BulkRequests.local_matches`)."""
        return await self.requests.bulks.local_matches(jobs, ended=ended)

    async def bulk_part(
        self,
        part_id: str,
        partition: int,
        action: str,
        job_ids: tuple[str, ...],
        params: dict[str, Any] | None,
        filter: dict[str, Any] | None,
    ) -> bool:
        """Partitioned: journal one partition's part of a bulk and carry it out in the
        background (`BulkRequests.journal_part`); False when it existed already."""
        made = await self.requests.bulks.journal_part(
            part_id, partition, action, job_ids, params, filter
        )
        self.bulks.start(part_id)  # (a part under way already: nothing new)
        return made

    async def signal(self, job_id: str, step: str, payload: dict[str, Any]) -> str:
        """Signal a waiting step: "completed" or "kept" (`ApiRequests.signal`)."""
        return await self.requests.signal(job_id, step, payload)

    async def fire_schedule(self, workflow: str, schedule: Schedule, job_id: str) -> bool:
        """Submit a schedule's firing as job `job_id` (`ScheduleRequests.fire_schedule`)."""
        return await self.requests.schedules.fire_schedule(workflow, schedule, job_id)

    async def pause_schedule(self, workflow: str, schedule: str, paused: bool) -> None:
        """Pause or resume a schedule, journaled (`ScheduleRequests.pause_schedule`)."""
        await self.requests.schedules.pause_schedule(workflow, schedule, paused)

    async def schedule_status(self, workflow: str, schedule: str) -> tuple[bool, str | None]:
        """Whether a schedule is paused, and the job it last started."""
        return await self.requests.schedules.schedule_status(workflow, schedule)

    async def cluster(self) -> dict[str, Any]:
        """The partitions, their leases and the managers running them (GET /api/cluster)."""
        return await self.partitions.cluster()

    async def adopt(self, partitions: list[int]) -> None:
        """Run partitions just taken (`PartitionRuns.adopt`), and their bulks under way."""
        await self.partitions.adopt(partitions)
        self.bulks.resume()

    async def release(self, partitions: list[int]) -> None:
        """Hand partitions over (`PartitionRuns.release`)."""
        await self.partitions.release(partitions)

    def lost(self, partitions: list[int]) -> None:
        """Leases lost: stop at once (`PartitionRuns.lost`)."""
        self.partitions.lost(partitions)
