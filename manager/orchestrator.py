"""The driver: each message through the pipeline, transport to journal to publish.

    transport ─▶ intake ─▶ orchestrator ─▶ engine ─▶ recorder ─▶ journal ─▶ outbox ─▶ transport
    (Delivery)   (event)   (this module)   (commands) (rows, messages) (commit) (publish, confirm)

For each event (a delivery read by `manager.intake`, a request from the API, a timer): apply
it, record its commands as a journal batch and outbound messages, append the batch, and
publish the messages once it is committed (or while it commits, when a crash would make the
very same messages again). No stage calls back into the one before it. A crash at any point
loses nothing: an unacked message is redelivered (and the engine ignores what it has seen),
an unconfirmed outbound message is published again by recovery, which replays the journal of
the running jobs through the same engine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import logging
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from manager import intake
from manager.cluster import handoff
from manager.cluster.directory import Directory
from manager.cluster.partitioning import partition_queue
from manager.cluster.placement import Placement
from manager.cluster.view import UNPARTITIONED, cluster_json
from manager.config import Workflow
from manager.config.schedules import Schedule
from manager.engine import (
    CancelRequested,
    CancelTimer,
    Command,
    EngineState,
    Event,
    Ignored,
    Job,
    JobArchived,
    JobFinished,
    JobsHandedOver,
    JobStarted,
    JobSubmitted,
    RetryRequested,
    SchedulePaused,
    SignalReceived,
    StartTimer,
    StepStatus,
    TimerFired,
    apply,
    canonical_uuid,
    replay,
)
from manager.engine import timers as timer_keys
from manager.engine.snapshot import restore
from manager.errors import (
    BrokerError,
    DuplicateJob,
    DuplicateKey,
    FencedOut,
    InvalidJobId,
    InvalidPayload,
    JobConflict,
    JobNotFound,
    JournalError,
    NotOwner,
    SubmitError,
    UnknownWorkflow,
)
from manager.ignoredlog import IgnoredLog
from manager.journal import EventRow, JobHistory, JobRow, Journal
from manager.observers import DeadLetterWatcher, Observer
from manager.outbox import Outbox
from manager.recorder import (
    Record,
    ReplyQueue,
    duplicate_reason,
    finished_notice,
    fired_journal_id,
    pending_message,
    record,
    rejection_notice,
    schedule_journal_id,
    to_event,
)
from manager.scheduler import Scheduler
from manager.settings import ManagerSettings, step_queues
from manager.timekeeper import Timekeeper
from manager.traces import TraceParent, new_trace_id
from manager.transport import (
    Delivery,
    Outbound,
    Transport,
    dead_letter_queue,
    manager_queues,
    signal_queue,
    trigger_queue,
)

if TYPE_CHECKING:
    from manager.cluster.ownership import Ownership

__all__ = ["ManagerSettings", "Orchestrator", "step_queues"]

log = logging.getLogger(__name__)

_REJECTIONS: dict[str, type[SubmitError]] = {
    "invalid-id": InvalidJobId,
    "unknown-workflow": UnknownWorkflow,
    "invalid-payload": InvalidPayload,
}
_DAY_S = 86_400.0


class Orchestrator:
    """Runs jobs: owns the engine state and the timers; drives the pipeline for each event."""

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
        # Partitioned (several managers on one PostgreSQL journal): only our partitions' jobs.
        self.ownership = ownership
        # Who runs the other partitions, for the API to ask about their jobs.
        self.directory = None if ownership is None else Directory(ownership.table, ownership.owner)
        self._reply_queue: ReplyQueue = (
            settings.queue if ownership is None else ownership.partitioning.reply_queue
        )
        # Rows of jobs that ended, until their batch is committed: they may have left memory.
        self._ended: dict[str, JobRow] = {}
        self._placement = (
            None
            if ownership is None
            else Placement(ownership.partitioning, journal, lambda: self._state, self._ended)
        )
        self._observers = tuple(observers)
        self._dead_letter_watchers = tuple(
            o for o in self._observers if isinstance(o, DeadLetterWatcher)
        )
        self.settings = settings
        self.journal = journal
        self.transport = transport
        self.now = clock
        self.new_id = new_id
        self.failed = asyncio.Event()
        self.failure: BaseException | None = None
        self._state = EngineState.from_workflows(
            self.workflows, max_running_jobs=settings.max_running_jobs
        )
        self._outbox = Outbox(
            transport, journal, clock, self._fail, settings.publish_retry_s,
            by_reply_queue=ownership is not None,
        )  # fmt: skip
        self._timers = Timekeeper(clock, self._timer_due)
        self._ignored = IgnoredLog(log)
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._retention: asyncio.Task[None] | None = None
        self.schedules = Scheduler(self, clock)
        # Partitioned: the partitions whose jobs are in memory, and the deliveries of each
        # being handled now (a hand-over waits for those to finish).
        self._running: set[int] = set()
        self._handling: dict[int, int] = {}
        self._handled = asyncio.Event()

    def __repr__(self) -> str:
        jobs = self._state.jobs
        running = sum(job.is_running for job in jobs.values())
        return f"<Orchestrator queue={self.settings.queue} jobs={len(jobs)} running={running}>"

    @property
    def history(self) -> JobHistory:
        """The journal's reads for browsing jobs (the API's lists and job pages)."""
        return self.journal

    @property
    def state(self) -> EngineState:
        """The engine state: every job in memory by id. Read it; never change it from outside."""
        return self._state

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
        pending = await self._recover()
        await self.transport.connect()
        queue = self.settings.queue
        partitions = self.ownership.partitioning.queues() if self.ownership else []
        await self.transport.declare(
            [*manager_queues(queue), *partitions, *step_queues(self.workflows.values())]
        )
        await self._outbox.publish(pending)
        self.transport.watch(self._restored)
        for key, due_at in self._state.timers.items():
            self._timers.arm(key, due_at)
        if self.ownership is None:
            await self.transport.consume(queue, self._tracked(self.on_reply))
        else:
            self._running = set(self.ownership.held)
            for partition in sorted(self.ownership.held):
                await self._consume_partition(partition)
        await self.transport.consume(trigger_queue(queue), self._tracked(self.on_trigger))
        await self.transport.consume(signal_queue(queue), self._tracked(self.on_signal))
        self._retention = asyncio.create_task(self._keep_retention(), name="retention")
        await self.schedules.start()
        log.info(
            "consuming replies on '%s' and triggers on '%s' (%d running jobs recovered, "
            "%d messages re-published, ready in %.2fs)",
            queue, trigger_queue(queue), len(self._state.jobs), len(pending),
            time.perf_counter() - started,
        )  # fmt: skip

    async def stop(self) -> None:
        """Stop consuming, finish the messages in hand, then close the connection and journal."""
        if self._retention is not None:
            self._retention.cancel()
        self.schedules.close()
        self._timers.close()  # journaled: the next start arms them again
        self._ignored.close()
        await self.transport.stop_consuming()
        await self._idle.wait()
        await self.transport.close()
        self._outbox.flush()
        try:
            await self.journal.close()
        except JournalError as exc:
            self._fail(exc)
        log.info("stopped")

    def _fail(self, exc: BaseException) -> None:
        """The journal cannot be written: stop taking work rather than lose events."""
        if self.failure is None:
            self.failure = exc
            log.critical("stopping: %s", exc)
        self.failed.set()

    async def _recover(self) -> list[Outbound]:
        """Rebuild running jobs by replaying their journal; returns messages to re-publish."""
        await self.journal.save_definitions(
            (wf.content_hash, wf.name, wf.model_dump_json(by_alias=True, exclude_defaults=True))
            for wf in self.workflows.values()
        )
        stored = await self.journal.definitions()
        pinned = [Workflow.model_validate_json(text) for _, text in stored.values()]
        self._state = EngineState.from_workflows(
            self.workflows, pinned, self.settings.max_running_jobs
        )
        roots = await self._running_roots()
        replay(self._state, map(to_event, await self._rows_to_replay(roots)))
        for observer in self._observers:
            observer.recovered(self._state.jobs.values())
        return await self._pending()

    async def _rows_to_replay(self, roots: list[str]) -> list[EventRow]:
        """The replayed rows of the trees under `roots`, and each schedule's latest pause or
        resume row, in journal order (so a firing replays against the pause state it met)."""
        rows = await self.journal.replay_rows(roots)
        journal_ids = [
            schedule_journal_id(wf.name, schedule.name)
            for wf in self.workflows.values()
            for schedule in wf.schedules
        ]
        if not journal_ids:
            return rows
        schedule_rows = await self.journal.schedule_rows(journal_ids)
        return list(heapq.merge(rows, schedule_rows, key=attrgetter("seq")))

    async def _running_roots(self, partitions: set[int] | None = None) -> list[str]:
        """The running top-level jobs of our partitions (or of `partitions`); all of them,
        unpartitioned. Oldest first."""
        roots = await self.journal.running_roots()
        if self.ownership is None:
            return roots
        return await self._in_partitions(roots, partitions)

    async def _pending(self, partitions: set[int] | None = None) -> list[Outbound]:
        """Messages the journal holds as unconfirmed (of our partitions, or of `partitions`)."""
        rows = await self.journal.pending_outbound()
        if self.ownership is not None:
            roots = {row.root_id for row in rows if row.root_id is not None}
            kept = set(await self._in_partitions(roots, partitions))
            rows = [row for row in rows if row.root_id is None or row.root_id in kept]
        return [pending_message(row) for row in rows]

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
        return self.ownership is None or self.ownership.owns(root_id, placed)

    # -- partitions ----------------------------------------------------------------------

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
        refuses every commit for them. The manager rejoins as a standby (manager.term)."""
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

        await self.transport.consume(queue, self._tracked(handle))

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
        drawn = self.ownership.partitioning.new_id_in(self.ownership.running, self.new_id)
        return drawn if drawn is not None else self.new_id()

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

    async def _restored(self) -> None:
        """After a reconnect: publish what the journal holds as unconfirmed.

        aio-pika cancels the handlers in flight when the connection drops; one cancelled
        after its commit leaves its messages journaled but unpublished, until now.
        """
        await self._tracked(self._outbox.publish_pending)(await self._pending())

    def _tracked(self, handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Wrap a handler so stop() can wait for the work in hand; a journal failure stops us."""

        async def run(item: Any) -> None:
            if self.failed.is_set():
                return  # a message is left unacked: RabbitMQ gives it to the next manager
            self._in_flight += 1
            self._idle.clear()
            try:
                await handler(item)
            except JournalError as exc:
                self._fail(exc)
            finally:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.set()

        return run

    # -- messages in ---------------------------------------------------------------------

    async def on_reply(self, delivery: Delivery) -> None:
        """A worker's reply: journal its effect, ack it, publish what it caused."""
        log.debug("reply %s %d bytes", delivery.correlation_id, len(delivery.body))
        event = intake.reply_event(delivery, self.now(), self.settings.max_message_bytes)
        if isinstance(event, intake.Undeliverable):
            await self._dead_letter(delivery, event.reason, "bad_reply")
            self.transport.ack(delivery)
            return
        # A redelivered reply makes the very same requests (same message ids): send them now.
        _, sending = await self._process(event, early=True)
        self.transport.ack(delivery)  # only after the commit: a crash before means redelivery
        # Shielded: if the connection drops now, aio-pika cancels this handler, but the
        # committed messages still go out once it is back.
        await asyncio.shield(sending)

    async def on_trigger(self, delivery: Delivery) -> None:
        """A job trigger: start the job (or answer a duplicate), or dead-letter it with why.

        Partitioned, a trigger whose job goes to another manager's partition (by its key or
        its id: `_placed`) is handed to it; one naming no job gets a new id.
        """
        new_id = self._new_job_id()
        event = intake.trigger_event(
            delivery, self.now(), new_id, self.settings.max_message_bytes, new_trace_id()
        )
        # Only a sender-chosen id can name a job that already ran; a new id cannot.
        named = bool(delivery.correlation_id)
        if self.ownership is not None and not isinstance(event, intake.Undeliverable):
            event = await self._placed(event, named)
            # Not `held`: a partition being handed over starts nothing new here.
            if event.partition is not None and event.partition not in self.ownership.running:
                chosen = None if named else event.job_id
                await self._hand_over(delivery, event.partition, handoff.TRIGGER, chosen)
                return
        if isinstance(event, intake.Undeliverable):
            await self._reject(delivery, event.reason, "invalid_trigger")
            if delivery.reply_to:
                await self._outbox.publish(
                    [rejection_notice(delivery.reply_to, delivery.correlation_id, event.reason)]
                )
            self.transport.ack(delivery)
            return
        log.debug("trigger %s for %s", event.job_id, event.workflow)
        if named and await self._answer_finished(event):
            self.transport.ack(delivery)
            return
        # A job id of ours is new each time: nothing goes out before the journal has it. The
        # sender's own id makes a redelivery yield the same job and messages: send them now.
        result, sending = await self._process(self.pinned(event), early=named)
        if result.rejected is not None:
            rejected = result.rejected  # its answer is in `sending`
            await self._reject(delivery, rejected.reason, rejected.kind.replace("-", "_"))
        elif result.duplicate is not None:
            log.info(
                "duplicate trigger: %s", duplicate_reason(result.duplicate),
                extra={"job": result.duplicate.existing},
            )  # fmt: skip
        self.transport.ack(delivery)
        await asyncio.shield(sending)  # as in on_reply

    async def on_signal(self, delivery: Delivery) -> None:
        """A signal for a waiting step: apply it, or dead-letter it with why it cannot be."""
        event = intake.signal_event(delivery, self.now(), self.settings.max_message_bytes)
        if isinstance(event, intake.Undeliverable):
            reason = event.reason
        elif (partition := await self._foreign_partition(event.job_id)) is not None:
            await self._hand_over(delivery, partition, handoff.SIGNAL, None)
            return
        else:
            reason = await self._finished_reason(event.job_id)
            if reason is None:
                result, sending = await self._process(event)
                reason = result.refused.reason if result.refused is not None else None
        if reason is not None:
            log.warning(
                "signal refused: %s reason=%s", delivery.correlation_id, reason,
                extra={"job": delivery.correlation_id or None},
            )  # fmt: skip
            await self._dead_letter(delivery, reason, "bad_signal")
            self.transport.ack(delivery)
            return
        self.transport.ack(delivery)
        await asyncio.shield(sending)

    async def _foreign_partition(self, job_id: str) -> int | None:
        """The partition of `job_id`'s tree when another manager runs it; None when we do."""
        if self.ownership is None or job_id in self._state.jobs:
            return None
        assert self._placement is not None
        partition = await self._placement.partition_of(canonical_uuid(job_id) or job_id)
        return None if partition in self.ownership.running else partition

    async def _finished_reason(self, job_id: str) -> str | None:
        """Why a signal cannot be for `job_id`: it ended and left memory; None when it did not."""
        row = await self.finished_row(job_id)
        return None if row is None else f"job {row.id} is already {row.status}"

    async def _answer_finished(self, event: JobSubmitted) -> bool:
        """A trigger for a job that ended and left memory: answer from the journal, once more."""
        row = await self.finished_row(event.job_id)
        if row is None:
            return False
        log.info("duplicate trigger for finished job=%s", row.id, extra={"job": row.id})
        if event.reply_to:
            batch, notice = finished_notice(row, event.reply_to, event.at)
            await self.journal.append(batch)
            await self._outbox.publish([notice])
        return True

    async def _reject(self, delivery: Delivery, reason: str, kind: str) -> None:
        """Dead-letter a trigger that cannot become a job."""
        log.warning(
            "trigger rejected: job=%s reason=%s", delivery.correlation_id, reason,
            extra={"job": delivery.correlation_id or None},
        )  # fmt: skip
        await self._dead_letter(delivery, reason, kind)

    async def _dead_letter(self, delivery: Delivery, reason: str, kind: str) -> None:
        """Keep `delivery` in the dead-letter queue with `reason`; `kind` labels it in metrics."""
        await self._outbox.dead_letter(delivery, self._dead_letters, reason)
        for watcher in self._dead_letter_watchers:
            watcher.dead_lettered(kind)

    @property
    def _dead_letters(self) -> str:
        return dead_letter_queue(self.settings.queue)

    # -- the pipeline --------------------------------------------------------------------

    async def _process(self, event: Event, *, early: bool = False) -> tuple[Record, asyncio.Future]:
        """Engine, recorder, journal, outbox: returns once the event's batch is committed.

        Returns the record and the publishing of its messages, under way. `early`: the
        messages go out while the commit is in flight (see `on_reply`). The append follows
        `apply` with no await in between, so the journal holds events in the engine's order.
        """
        _, commands = apply(self._state, event)
        result = record(event, commands, self._reply_queue)
        if result.rejected is not None or result.refused is not None or result.duplicate:
            return result, self._send(result.outbound)  # nothing to journal
        committed = self.journal.append(result.batch)
        for row in result.ended:
            self._ended[row.id] = row
        sending = self._send(result.outbound) if early else None
        try:
            await committed
        except JournalError as exc:
            self._fail(exc)
            raise
        finally:
            for row in result.ended:
                if self._ended.get(row.id) is row:
                    del self._ended[row.id]
        for command in commands:
            self._carry_out(command)
        for observer in self._observers:
            observer.observe(commands)
        return result, sending if sending is not None else self._send(result.outbound)

    def _send(self, messages: list[Outbound]) -> asyncio.Future[None]:
        """Publish `messages` in the background (a finished future when there are none)."""
        if not messages:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        sending = asyncio.ensure_future(self._outbox.publish(messages))
        sending.add_done_callback(_publish_given_up)
        return sending

    def _carry_out(self, command: Command) -> None:
        """What a command asks of the manager itself, once its event is journaled."""
        _log_command(command)
        if isinstance(command, Ignored):
            self._ignored.ignored(command.subject, command.reason)
        elif isinstance(command, StartTimer):
            self._timers.arm(command.key, command.due_at)
        elif isinstance(command, CancelTimer):
            self._timers.cancel(command.key)
        elif isinstance(command, JobFinished) and command.parent_id is None:
            # Its snapshot is committed now: the engine may let it go.
            apply(self._state, JobArchived(command.job_id, self.now()))

    def pinned(self, event: JobSubmitted) -> JobSubmitted:
        """Pin a new submission to today's definition, so a replay runs the same one."""
        definition = self._state.current.get(event.workflow)
        return dataclasses.replace(event, definition=definition) if definition else event

    def _timer_due(self, key: str) -> None:
        if self.ownership is not None and key not in self._state.timers:
            return  # its job was handed over to another manager meanwhile
        task = asyncio.create_task(self._tracked(self._on_timer)(key))
        task.add_done_callback(_log_crash)

    async def _on_timer(self, key: str) -> None:
        _, sending = await self._process(TimerFired(key, self.now()))
        await sending

    # -- the API's requests --------------------------------------------------------------

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
        """Start a job (the HTTP API's way in); returns its id or raises a SubmitError.

        `meta` is the job's metadata (sent on each of its requests as `x-meta`).

        The job joins `trace` (the caller's trace context), else it starts a trace of its own.
        `priority` (0-9, higher first) orders it wherever the manager holds work back.
        With a `not_before` later than now it is scheduled, and starts then.
        """
        chosen = job_id is not None  # a new id of ours cannot name an existing job
        job_id = job_id if job_id is not None else self._new_job_id()
        canonical = canonical_uuid(job_id)
        trace_id, parent = (trace.trace_id, trace.span_id) if trace else (new_trace_id(), None)
        submitted = JobSubmitted(
            job_id, workflow, payload, self.now(), trace_id=trace_id, trace_parent=parent,
            priority=priority,
            not_before=not_before,
            meta=meta,
        )  # fmt: skip
        submitted = await self._placed(self.pinned(submitted), chosen)
        if canonical is not None and submitted.partition is not None:
            self._require_owner(canonical, submitted.partition)
        if (
            chosen
            and canonical is not None
            and (
                canonical in self._state.jobs
                or canonical in self._state.gone  # a completed child, its row maybe not yet written
                or await self.finished_row(canonical) is not None
            )
        ):
            raise DuplicateJob(f"a job with id {canonical} already exists")
        result, sending = await self._process(submitted)
        if result.rejected is not None:
            rejected = result.rejected
            raise _REJECTIONS.get(rejected.kind, SubmitError)(rejected.reason)
        if result.duplicate is not None:
            raise DuplicateKey(duplicate_reason(result.duplicate), result.duplicate.existing)
        await sending
        return canonical or job_id

    async def fire_schedule(self, workflow: str, schedule: Schedule, job_id: str) -> bool:
        """Submit a schedule's firing as job `job_id`; False when it starts no job (it ran
        already, or its previous job still runs and the schedule skips overlaps)."""
        submitted = JobSubmitted(job_id, workflow, dict(schedule.payload), self.now())
        event = dataclasses.replace(self.pinned(submitted), schedule=schedule.name)
        event = await self._placed(event, named=True)
        if not self._owns(job_id, event.partition):
            return False  # partitioned: the manager holding this firing's partition fires it
        if job_id in self._state.jobs or await self.finished_row(job_id) is not None:
            return False
        await self._catch_up_pause(workflow, schedule.name)
        result, sending = await self._process(event)
        await sending
        return result.fired is not None and result.fired.job_id == job_id

    async def _catch_up_pause(self, workflow: str, schedule: str) -> None:
        """Partitioned: another manager may have paused or resumed the schedule since we
        replayed its rows; replay its latest pause or resume row into our engine too (it is
        committed: not journaled again), so our firing meets the state the journal has."""
        if self.ownership is None:
            return
        row = await self.journal.latest_row(schedule_journal_id(workflow, schedule))
        if row is None:
            return
        event = to_event(row)
        paused = f"{workflow}/{schedule}" in self._state.schedules_paused
        if isinstance(event, SchedulePaused) and event.paused != paused:
            apply(self._state, event)

    async def pause_schedule(self, workflow: str, schedule: str, paused: bool) -> None:
        """Pause (`paused`) or resume a schedule, journaled; JobNotFound for an unknown one.

        Partitioned, a manager running no partition (a standby) cannot commit: NotOwner.
        """
        if self.ownership is not None and not self.ownership.running:
            home = self.ownership.partitioning.of(schedule_journal_id(workflow, schedule))
            raise NotOwner(
                "this manager runs no partition now (a standby); ask one that does", home
            )
        event = SchedulePaused(workflow, schedule, paused, self.now())
        result, sending = await self._process(event)
        if result.refused is not None:
            raise JobNotFound(result.refused.reason)
        await sending
        log.info("schedule %s/%s %s", workflow, schedule, "paused" if paused else "resumed")

    async def schedule_status(self, workflow: str, schedule: str) -> tuple[bool, str | None]:
        """Whether a schedule is paused, and the job it last started: the journal's latest
        `fired` row (committed with its firing), so it survives a restart."""
        row = await self.journal.latest_row(fired_journal_id(workflow, schedule))
        last_job = row.meta.get("job") if row is not None else None
        await self._catch_up_pause(workflow, schedule)
        return f"{workflow}/{schedule}" in self._state.schedules_paused, last_job

    async def find_job(self, job_id: str, *, replay_foreign: bool = False) -> Job | None:
        """A job in memory, or a finished one restored from its journal snapshot.

        Partitioned, a running job (a child too) of another manager's partition is live in
        that manager's memory: NotOwner, so the API asks it; with `replay_foreign` (it cannot
        be asked now), the job as its committed journal rows make it.
        """
        job = self._state.jobs.get(job_id)
        if job is not None:
            return job
        row = self._ended.get(job_id) or await self.journal.job(job_id)
        if row is None or row.snapshot is None:
            return None if self.ownership is None else await self._foreign(job_id, replay_foreign)
        workflow = self._state.definitions.get(row.definition)
        if workflow is None:
            stored = await self.journal.definitions([row.definition])
            if row.definition not in stored:
                return None
            workflow = Workflow.model_validate_json(stored[row.definition][1])
        return restore(row.snapshot, workflow)

    async def _foreign(self, job_id: str, replay_foreign: bool) -> Job | None:
        """A job not in our memory nor ended in the journal: NotOwner when another manager
        runs its tree (with no partition when no job has that id here: a running child that
        has written nothing yet may be another manager's); with `replay_foreign`, the job as
        the journal has it instead."""
        assert self._placement is not None
        tree = await self._placement.tree_of(job_id)
        if tree is None:
            if replay_foreign:
                return None
            raise NotOwner(f"no job {job_id}", None)
        if self._owns(*tree):
            return None
        if not replay_foreign:
            self._require_owner(*tree)
        return await self._replayed(tree[0], job_id)

    async def _replayed(self, root_id: str, job_id: str) -> Job | None:
        """A job of a tree another manager runs, as its committed journal rows make it:
        replayed through the same engine into a state of its own (ours is left alone)."""
        stored = await self.journal.definitions()
        pinned = [Workflow.model_validate_json(text) for _, text in stored.values()]
        state = EngineState.from_workflows(self.workflows, pinned, self.settings.max_running_jobs)
        replay(state, map(to_event, await self.journal.replay_rows([root_id])))
        return state.jobs.get(job_id)

    async def finished_row(self, job_id: str) -> JobRow | None:
        """The journal row of a job that has ended and left memory, if `job_id` names one."""
        canonical = canonical_uuid(job_id)
        if canonical is None or canonical in self._state.jobs:
            return None
        return self._ended.get(canonical) or await self.journal.job(canonical)

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level jobs of a workflow by status (finished ones since `finished_since`)."""
        return await self.journal.workflow_jobs(name, finished_since)

    async def cancel(self, job_id: str) -> Job:
        """Cancel a scheduled or running job; JobNotFound or JobConflict (it ended) otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        await self._require_owner_of(canonical)
        row = await self.finished_row(canonical)
        if row is not None:
            raise JobConflict(
                f"job {canonical} is already {row.status}; only a running job can be cancelled"
            )
        return await self._control(CancelRequested(canonical, self.now()))

    async def retry(self, job_id: str) -> Job:
        """Run a failed job again from where it failed; JobNotFound or JobConflict otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        await self._require_owner_of(canonical)
        row = await self.finished_row(canonical)
        if row is not None and row.root_id not in self._state.jobs:
            # It has left memory: replay its journal to bring it back, then retry it.
            rows = await self.journal.replay_rows([row.root_id])
            if row.root_id not in self._state.jobs:
                replay(self._state, map(to_event, rows))
        return await self._control(RetryRequested(canonical, self.now()))

    async def signal(self, job_id: str, step: str, payload: dict[str, Any]) -> str:
        """Signal a waiting step; returns "completed" (it was waiting) or "kept" (it will be,
        and completes when reached). JobNotFound or JobConflict (with why) otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        await self._require_owner_of(canonical)
        reason = await self._finished_reason(canonical)
        if reason is not None:
            raise JobConflict(reason)
        job = self._state.jobs.get(canonical)  # before: a job that completes leaves memory
        result, sending = await self._process(SignalReceived(canonical, step, payload, self.now()))
        refused = result.refused
        if refused is not None or job is None:
            reason = refused.reason if refused else f"no job {canonical}"
            kind = refused.kind if refused else "not-found"
            raise (JobNotFound if kind == "not-found" else JobConflict)(reason)
        await sending
        return "kept" if job.steps[step].status is StepStatus.PENDING else "completed"

    async def _require_owner_of(self, job_id: str) -> None:
        """NotOwner unless `job_id`'s tree is ours (no read when unpartitioned or in memory);
        with no partition when no job has that id here (another manager may run it: a running
        child that has written nothing yet)."""
        if self.ownership is None or job_id in self._state.jobs:
            return
        assert self._placement is not None
        tree = await self._placement.tree_of(job_id)
        if tree is None:
            raise NotOwner(f"no job {job_id}", None)
        self._require_owner(*tree)

    async def _control(self, event: CancelRequested | RetryRequested) -> Job:
        job = self._state.jobs.get(event.job_id)  # before: a job that settles leaves memory
        result, sending = await self._process(event)
        refused = result.refused
        if refused is not None or job is None:
            if job is not None and job.parent is None:
                # Brought back for a retry it cannot have: it goes again.
                apply(self._state, JobArchived(job.id, self.now()))
            reason = refused.reason if refused else f"no job {event.job_id}"
            kind = refused.kind if refused else "not-found"
            raise (JobNotFound if kind == "not-found" else JobConflict)(reason)
        await sending
        return job

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
                self._fail(exc)
                return
            await asyncio.sleep(self.settings.retention_every_s)


def _publish_given_up(sending: asyncio.Future[None]) -> None:
    """A publish cut short by the transport closing (a stop): its messages stay unconfirmed in
    the journal, for the next start or owner to publish; nothing to report louder."""
    if not sending.cancelled() and isinstance(sending.exception(), BrokerError):
        log.debug("publishing given up at stop: %s", sending.exception())


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("timer handling failed", exc_info=task.exception())


def _log_command(command: Command) -> None:
    if isinstance(command, JobStarted):
        level = logging.INFO if command.parent_id is None else logging.DEBUG
        log.log(
            level, "job started job=%s workflow=%s", command.job_id, command.workflow,
            extra={"job": command.job_id, "workflow": command.workflow},
        )  # fmt: skip
    elif isinstance(command, JobFinished):
        level = logging.INFO if command.parent_id is None else logging.DEBUG
        detail = f" error={command.error}" if command.error else ""
        log.log(
            level, "job %s job=%s workflow=%s%s",
            command.status, command.job_id, command.workflow, detail,
            extra={
                "job": command.job_id,
                "workflow": command.workflow,
                "step": (command.error or {}).get("step"),
            },
        )  # fmt: skip
    elif isinstance(command, StartTimer):
        key = timer_keys.parse(command.key)
        if key is not None and key.is_retry:
            log.info(
                "retry scheduled job=%s step=%s attempt=%s at=%.3f",
                key.job_id, key.step, key.attempt, command.due_at,
                extra={"job": key.job_id, "step": key.step, "attempt": key.attempt},
            )  # fmt: skip
