"""The driver: each message through the pipeline, transport to journal to publish.

    transport ─▶ intake ─▶ orchestrator ─▶ engine ─▶ recorder ─▶ journal ─▶ outbox ─▶ transport
    (Delivery)   (event)   (this module)   (commands) (rows, messages) (commit) (publish, confirm)

For each event (a delivery read by `workflow_manager.intake`, a request from the API, a timer):
apply it, record its commands as a journal batch and outbound messages, append the batch, and
publish the messages once it is committed (or while it commits, when a crash would make the
very same messages again). No stage calls back into the one before it. A crash at any point
loses nothing: an unacked message is redelivered (and the engine ignores what it has seen),
an unconfirmed outbound message is published again by recovery, which replays the journal of
the running jobs through the same engine.

This module holds that pipeline core: start, stop and recovery, the deliveries in
(`on_reply`, `on_trigger`, `on_signal`), `_process` and what a command asks of the manager,
timers and retention. The API's requests are in `workflow_manager.requests` (`ApiRequests`), the
partitions of several managers in `workflow_manager.cluster.running` (`PartitionRuns`);
`Orchestrator` is made of the three.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workflow_manager import intake
from workflow_manager.cluster import handoff
from workflow_manager.cluster.directory import Directory
from workflow_manager.cluster.placement import Placement
from workflow_manager.cluster.running import PartitionRuns
from workflow_manager.config import Workflow
from workflow_manager.engine import (
    CancelTimer,
    Command,
    EngineState,
    Event,
    Ignored,
    JobArchived,
    JobFinished,
    JobStarted,
    JobSubmitted,
    StartTimer,
    TimerFired,
    apply,
    replay,
)
from workflow_manager.engine import timers as timer_keys
from workflow_manager.errors import BrokerError, JournalError, MessageFailed
from workflow_manager.ignoredlog import IgnoredLog
from workflow_manager.journal import EventRow, JobHistory, JobRow, Journal
from workflow_manager.observers import DeadLetterWatcher, Observer
from workflow_manager.outbox import Outbox
from workflow_manager.recorder import (
    Record,
    ReplyQueue,
    duplicate_reason,
    finished_notice,
    pending_message,
    record,
    rejection_notice,
    schedule_journal_id,
    to_event,
)
from workflow_manager.requests import ApiRequests
from workflow_manager.scheduler import Scheduler
from workflow_manager.settings import ManagerSettings, step_queues
from workflow_manager.textline import one_line
from workflow_manager.timekeeper import Timekeeper
from workflow_manager.traces import new_trace_id
from workflow_manager.transport import (
    Delivery,
    Outbound,
    Transport,
    dead_letter_queue,
    manager_queues,
    signal_queue,
    trigger_queue,
)

if TYPE_CHECKING:
    from workflow_manager.cluster.ownership import Ownership

__all__ = ["ManagerSettings", "Orchestrator", "step_queues"]

log = logging.getLogger(__name__)

_DAY_S = 86_400.0


class Orchestrator(ApiRequests, PartitionRuns):
    """Runs jobs: owns the engine state and the timers; drives the pipeline for each event.

    The API's requests are `ApiRequests` (`workflow_manager.requests`); running some of the
    partitions of several managers is `PartitionRuns` (`workflow_manager.cluster.running`).
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
            self.workflows, (), settings.max_running_jobs, settings.max_fanout_bytes
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
        # Set while memory is rebuilt from the journal after a message failed (`_restore`):
        # every new event waits for it.
        self._restoring: asyncio.Event | None = None
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
            await self.transport.consume(queue, self._tracked(self._guarded(self.on_reply)))
        else:
            self._running = set(self.ownership.held)
            for partition in sorted(self.ownership.held):
                await self._consume_partition(partition)
        await self.transport.consume(
            trigger_queue(queue), self._tracked(self._guarded(self.on_trigger))
        )
        await self.transport.consume(
            signal_queue(queue), self._tracked(self._guarded(self.on_signal))
        )
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
        self._state = await self._rebuilt_state()
        for observer in self._observers:
            observer.recovered(self._state.jobs.values())
        return await self._pending()

    async def _rebuilt_state(self, partitions: set[int] | None = None) -> EngineState:
        """The engine state the journal holds: our running jobs' rows (of `partitions`, when
        partitioned; None: all we hold) replayed through the engine, over every stored
        definition (a running job may be pinned to an old one)."""
        stored = await self.journal.definitions()
        pinned = [Workflow.model_validate_json(text) for _, text in stored.values()]
        state = EngineState.from_workflows(
            self.workflows, pinned, self.settings.max_running_jobs, self.settings.max_fanout_bytes
        )
        roots = await self._running_roots(partitions)
        replay(state, map(to_event, await self._rows_to_replay(roots)))
        return state

    async def _rows_to_replay(self, roots: list[str]) -> list[EventRow]:
        """The replayed rows of the trees under `roots`, then each schedule's latest pause or
        resume row.

        Trees first: each firing among them started its job when applied (a firing the engine
        ignored has no tree), so it must start again whatever pause the journal holds before
        it; one can, when another manager journaled it between our reading the schedule as
        running and our committing the firing."""
        rows = await self.journal.replay_rows(roots)
        journal_ids = [
            schedule_journal_id(wf.name, schedule.name)
            for wf in self.workflows.values()
            for schedule in wf.schedules
        ]
        if not journal_ids:
            return rows
        schedule_rows = await self.journal.schedule_rows(journal_ids)
        return rows + schedule_rows

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

    # -- the barrier around each message ------------------------------------------------

    def _guarded(self, handler: Callable[[Delivery], Awaitable[None]]) -> Callable[..., Any]:
        """Wrap a delivery handler in the barrier: whatever goes wrong handling one delivery
        refuses that delivery alone (`_refuse`); the manager goes on with the next.

        A journal or broker failure is not the message's: it is left to `_tracked` (the
        manager stops or rejoins) and to the broker's redelivery."""

        async def run(delivery: Delivery) -> None:
            try:
                await handler(delivery)
            except (JournalError, BrokerError):
                raise
            except Exception as exc:
                await self._refuse(delivery, exc)

        return run

    async def _refuse(self, delivery: Delivery, exc: Exception) -> None:
        """A delivery whose handling failed: logged once, dead-lettered with the reason (a
        trigger's sender told), acked. Memory already agrees with the journal: a failure in
        the pipeline rebuilt it (`_process`), and nothing before the pipeline changes it."""
        kind = self._kind_of(delivery)
        failure = exc if isinstance(exc, MessageFailed) else MessageFailed(f"this {kind}", exc)
        job = (delivery.correlation_id or "").partition(":")[0] or None
        log.error(
            "%s refused: id=%s %s", kind, delivery.correlation_id, failure,
            exc_info=failure.cause, extra={"job": job},
        )  # fmt: skip
        reason = f"{failure}; nothing of it was kept (the manager's log has the details)"
        # Acked once kept in the dead-letter queue: if that fails (the manager stopping), the
        # broker gives the delivery to the next manager instead.
        await self._dead_letter(delivery, reason, f"failed_{kind}")
        if kind == "trigger" and delivery.reply_to:
            notice = rejection_notice(delivery.reply_to, delivery.correlation_id, reason)
            await self._outbox.publish([notice])
        self.transport.ack(delivery)

    def _kind_of(self, delivery: Delivery) -> str:
        """What a delivery is, by its queue: a trigger, a signal, or a worker's reply."""
        if delivery.queue == trigger_queue(self.settings.queue):
            return "trigger"
        if delivery.queue == signal_queue(self.settings.queue):
            return "signal"
        return handoff.handoff_kind(delivery) or "reply"

    async def _restore(self) -> None:
        """Make memory agree with the journal again, after a message failed half-way through
        the pipeline: every batch appended before it is committed, then the running jobs are
        rebuilt by replaying the journal, as at a start, and their timers armed again.

        Events arriving meanwhile wait (`_process`); a second failure waits for this one.
        Shielded: a handler cancelled meanwhile (aio-pika cancels those in flight when the
        connection drops) must not leave memory half rebuilt."""
        await asyncio.shield(self._rebuild())

    async def _rebuild(self) -> None:
        if self._restoring is not None:
            await self._restoring.wait()
            return
        self._restoring = asyncio.Event()
        try:
            await self.journal.flush()
            # Partitioned: the partitions whose jobs are in memory now (one being taken over
            # is replayed by its adoption).
            running = set(self._running) if self.ownership is not None else None
            self._state = await self._rebuilt_state(running)
            self._timers.clear()
            for key, due_at in self._state.timers.items():
                self._timers.arm(key, due_at)
            for observer in self._observers:
                observer.recovered(self._state.jobs.values())
            log.warning("memory rebuilt from the journal: %d jobs", len(self._state.jobs))
        finally:
            self._restoring.set()
            self._restoring = None

    async def _change(self, change: Callable[[], object], what: str) -> None:
        """Change engine state outside the pipeline (a journaled row replayed, a job let go)
        inside the same barrier: if `change` fails, memory is rebuilt and MessageFailed
        raised, naming `what`."""
        while self._restoring is not None:
            await self._restoring.wait()
        try:
            change()
        except Exception as exc:
            await self._restore()
            raise MessageFailed(what, exc) from exc

    # -- messages in ---------------------------------------------------------------------

    async def on_reply(self, delivery: Delivery) -> None:
        """A worker's reply: journal its effect, ack it, publish what it caused."""
        log.debug("reply %s %d bytes", delivery.correlation_id, len(delivery.body))
        limits = self.settings
        event = intake.reply_event(
            delivery, self.now(), limits.max_message_bytes, limits.max_json_depth
        )
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
        limits = self.settings
        event = intake.trigger_event(
            delivery, self.now(), new_id, limits.max_message_bytes, new_trace_id(),
            limits.max_json_depth,
        )  # fmt: skip
        # Only a sender-chosen id can name a job that already ran; a new id cannot.
        named = bool(delivery.correlation_id)
        if self.ownership is not None and not isinstance(event, intake.Undeliverable):
            event = await self._placed(event, named)
            # Not `held`: a partition being handed over starts nothing new here, and one being
            # taken over has its jobs in memory only once its adoption is done.
            if event.partition is not None and event.partition not in self._runs_now():
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
        limits = self.settings
        event = intake.signal_event(
            delivery, self.now(), limits.max_message_bytes, limits.max_json_depth
        )
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
                "signal refused: %s reason=%s", delivery.correlation_id, one_line(reason, 500),
                extra={"job": delivery.correlation_id or None},
            )  # fmt: skip
            await self._dead_letter(delivery, reason, "bad_signal")
            self.transport.ack(delivery)
            return
        self.transport.ack(delivery)
        await asyncio.shield(sending)

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
            "trigger rejected: job=%s reason=%s", delivery.correlation_id, one_line(reason, 500),
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
        messages go out while the commit is in flight (see `on_reply`).

        The barrier: if any stage fails for this event (a bug, a value the journal cannot
        hold), memory is rebuilt from the journal (`_restore`) and MessageFailed raised, for
        the caller to refuse its message; a journal failure (the database) stops us instead.
        """
        while self._restoring is not None:
            await self._restoring.wait()
        try:
            return await self._pipeline(event, early)
        except (JournalError, BrokerError):
            raise
        except Exception as exc:
            await self._restore()
            raise MessageFailed(_what(event), exc) from exc

    async def _pipeline(self, event: Event, early: bool) -> tuple[Record, asyncio.Future]:
        """`_process` inside its barrier. The append follows `apply` with no await in
        between, so the journal holds events in the engine's order."""
        _, commands = apply(self._state, event)
        result = record(event, commands, self._reply_queue)
        if result.rejected is not None or result.refused is not None or result.duplicate:
            return result, self._send(result.outbound)  # nothing to journal
        committed = self.journal.append(result.batch)
        for row in result.ended:
            self._ended[row.id] = row
        # A batch refused at once (it cannot be encoded) must send nothing.
        sending = self._send(result.outbound) if early and not committed.done() else None
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
        try:
            _, sending = await self._process(TimerFired(key, self.now()))
        except MessageFailed as exc:
            # Armed again by the rebuild, it would fail again at once: it waits for a restart.
            self._timers.cancel(key)
            log.error("timer %s refused: %s", key, exc, exc_info=exc.cause)
            return
        await sending

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


def _what(event: Event) -> str:
    """The message an event came from, as a user would name it, for MessageFailed."""
    job_id = getattr(event, "job_id", None)
    name = type(event).__name__
    return f"{name} of job {job_id}" if job_id else name


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
