"""The pipeline: one event through engine, recorder, journal and outbox, inside the barrier.

    event ─▶ engine ─▶ recorder ─▶ journal ─▶ outbox
             (commands) (rows, messages) (commit) (publish, confirm)

`Pipeline` owns memory: the engine state, its timers, and the rows of jobs that ended until
their batch is committed. Every event (a delivery read by `workflow_manager.deliveries`, an API
request of `workflow_manager.requests`, a timer) goes through `process`: applied, recorded,
appended, committed, carried out, observed, and its messages published.

The barrier: if a stage fails for one event (a bug, a value the journal cannot hold), memory is
rebuilt from the journal (`rebuild_after_failure`) and `MessageFailed` raised for the caller to
refuse that event alone; a journal failure stops the manager instead (`InFlight.fail`).

The few changes of memory that do not come as an event through `process` are methods named for
what they are, each listed in docs/architecture.md: `recover` (a start), `replay_for_adoption`
and `hand_over` (partitions taken and given), `set_quotas` (their shares of cluster-wide
limits), `replay_for_retry`, `let_go` and `catch_up` (API
requests, inside the barrier), `archive_after_commit` and `rebuild_after_failure`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from workflow_manager import collector
from workflow_manager.commandlog import log_command
from workflow_manager.engine import (
    BulkSlice,
    CancelTimer,
    Command,
    EngineState,
    Event,
    Ignored,
    JobArchived,
    JobFinished,
    JobsHandedOver,
    JobsRecalled,
    JobSubmitted,
    QuotasSet,
    QuotasUsed,
    RateHistory,
    SchedulePaused,
    StartTimer,
    TimerFired,
    apply,
    replay,
)
from workflow_manager.errors import BrokerError, JournalError, MessageFailed
from workflow_manager.ignoredlog import IgnoredLog
from workflow_manager.inflight import InFlight
from workflow_manager.journal import EventRow, JobRow, Journal
from workflow_manager.observers import Observer
from workflow_manager.outbox import Outbox
from workflow_manager.recorder import Record, ReplyQueue, record, to_event
from workflow_manager.recovery import Recovery
from workflow_manager.timekeeper import Timekeeper
from workflow_manager.transport import Outbound

__all__ = ["Pipeline"]

log = logging.getLogger(__name__)


class Pipeline:
    """Runs each event through the stages, and owns the memory they change: the engine state,
    its timers, the rows of jobs that ended until committed, and (partitioned) which
    partitions' jobs are in memory."""

    def __init__(
        self,
        journal: Journal,
        outbox: Outbox,
        recovery: Recovery,
        work: InFlight,
        clock: Callable[[], float],
        observers: Sequence[Observer],
        reply_queue: ReplyQueue,
        ended: dict[str, JobRow],
        *,
        partitioned: bool = False,
    ) -> None:
        self._journal = journal
        self._outbox = outbox
        self._recovery = recovery
        self._work = work
        self._now = clock
        self._observers = tuple(observers)
        self._reply_queue = reply_queue
        # Rows of jobs that ended, until their batch is committed: they may have left memory.
        self._ended = ended
        self._partitioned = partitioned
        self._state = recovery.blank()
        self._timers = Timekeeper(clock, self._timer_due)
        self._ignored = IgnoredLog(log)
        # Set while memory is rebuilt from the journal after a message failed: every new
        # event waits for it.
        self._restoring: asyncio.Event | None = None
        # Partitioned: the partitions whose jobs are in memory.
        self._partitions: set[int] = set()

    def __repr__(self) -> str:
        return f"<Pipeline jobs={len(self._state.jobs)} timers={len(self._state.timers)}>"

    @property
    def state(self) -> EngineState:
        """The engine state: every job in memory by id. Read it; never change it from outside."""
        return self._state

    @property
    def ended(self) -> Mapping[str, JobRow]:
        """The rows of jobs that ended, by id, until their batch is committed."""
        return self._ended

    @property
    def partitions(self) -> AbstractSet[int]:
        """Partitioned: the partitions whose jobs are in memory (adopted, not handed over).
        A live view: read it, never change it from outside."""
        return self._partitions

    # -- one event -----------------------------------------------------------------------

    async def process(
        self, event: Event, *, early: bool = False
    ) -> tuple[Record, asyncio.Future[None]]:
        """Engine, recorder, journal, outbox: returns once the event's batch is committed.

        Returns the record and the publishing of its messages, under way. `early`: the
        messages go out while the commit is in flight (a redelivery would make the same ones).

        The barrier: if any stage fails for this event, memory is rebuilt from the journal and
        MessageFailed raised, for the caller to refuse its message; a journal failure (the
        database) stops us instead.
        """
        while self._restoring is not None:
            await self._restoring.wait()
        try:
            return await self._run(event, early)
        except (JournalError, BrokerError):
            raise
        except Exception as exc:
            await self.rebuild_after_failure()
            raise MessageFailed(_what(event), exc) from exc

    async def _run(self, event: Event, early: bool) -> tuple[Record, asyncio.Future[None]]:
        """`process` inside its barrier. The append follows `apply` with no await in
        between, so the journal holds events in the engine's order."""
        _, commands = apply(self._state, event)
        result = record(event, commands, self._reply_queue)
        if result.rejected is not None or result.refused is not None or result.duplicate:
            if result.duplicate is not None:  # answered now, nothing to journal: counted
                for observer in self._observers:
                    observer.observe(commands)
            return result, self.send(result.outbound)  # nothing to journal
        committed = self._journal.append(result.batch)
        for row in result.ended:
            self._ended[row.id] = row
        # A batch refused at once (it cannot be encoded) must send nothing.
        sending = self.send(result.outbound) if early and not committed.done() else None
        try:
            await committed
        except JournalError as exc:
            self._work.fail(exc)
            raise
        finally:
            for row in result.ended:
                if self._ended.get(row.id) is row:
                    del self._ended[row.id]
        quiet = isinstance(event, BulkSlice)  # its jobs' lines at DEBUG; one line per slice
        for command in commands:
            self._carry_out(command, quiet)
        for observer in self._observers:
            observer.observe(commands)
        return result, sending if sending is not None else self.send(result.outbound)

    def send(self, messages: list[Outbound]) -> asyncio.Future[None]:
        """Publish `messages` in the background (a finished future when there are none)."""
        sending = self._outbox.start(messages)
        if messages:
            sending.add_done_callback(_publish_given_up)
        return sending

    def _carry_out(self, command: Command, quiet: bool = False) -> None:
        """What a command asks of the manager itself, once its event is journaled (`quiet`:
        its log line at DEBUG, for one of many jobs a bulk action changed)."""
        log_command(command, quiet)
        if isinstance(command, Ignored):
            self._ignored.ignored(command.subject, command.reason)
        elif isinstance(command, StartTimer):
            self._timers.arm(command.key, command.due_at)
        elif isinstance(command, CancelTimer):
            self._timers.cancel(command.key)
        elif isinstance(command, JobFinished) and command.parent_id is None:
            self.archive_after_commit(command.job_id)

    def pinned(self, event: JobSubmitted) -> JobSubmitted:
        """Pin a new submission to today's definition, so a replay runs the same one (unless it
        names one already: a fork of a job pinned to its source's)."""
        if event.definition is not None:
            return event
        definition = self._state.current.get(event.workflow)
        return dataclasses.replace(event, definition=definition) if definition else event

    # -- changes of memory outside `process`, each named ----------------------------------

    async def recover(self) -> None:
        """A start: memory becomes what the journal holds of our running jobs."""
        with collector.long_lived():  # the jobs recovered live on, and no garbage is made
            self._state = await self._recovery.state(self._now())
            self._recovered()

    def archive_after_commit(self, job_id: str) -> None:
        """A top-level job ended and its snapshot is committed: the engine lets it go
        (`JobArchived`, not journaled; its row answers for it from now on)."""
        apply(self._state, JobArchived(job_id, self._now()))

    def replay_for_adoption(
        self, rows: list[EventRow], recalled: JobsRecalled, history: RateHistory
    ) -> None:
        """Partitions taken over: their ended jobs whose rules outlive them recalled, their
        rate windows' recent starts counted, then their running jobs' committed rows replayed
        into memory. Their deliveries are handled here once `adopted` says so."""
        if recalled.jobs:
            apply(self._state, recalled)
        if history.starts or history.jobs:
            apply(self._state, history)
        replay(self._state, map(to_event, rows))
        self._recovered()

    def adopted(self, partitions: Iterable[int]) -> None:
        """The jobs of `partitions` are in memory from now on (their adoption replayed them)."""
        self._partitions.update(partitions)

    def hand_over(self, partitions: set[int], roots: tuple[str, ...]) -> None:
        """Partitions handed to another manager: their job trees `roots` leave memory with
        their timers, slots and keys (`JobsHandedOver`, not journaled: the next owner replays
        them). No await: a delivery that starts later finds the partitions not held."""
        self._partitions -= partitions
        _, commands = apply(self._state, JobsHandedOver(roots, self._now()))
        for command in commands:
            self._carry_out(command)
        for observer in self._observers:
            observer.observe(commands)  # JobsReleased: streams following those jobs end
            observer.recovered(self._state.jobs.values())

    async def replay_for_retry(self, rows: list[EventRow], job_id: str) -> None:
        """A retried job that left memory: its committed rows replayed back (not journaled
        again), inside the barrier."""
        await self._change(
            lambda: replay(self._state, map(to_event, rows)), f"retry of job {job_id}"
        )

    async def let_go(self, job_id: str) -> None:
        """A top-level job brought back for a retry it cannot have leaves memory again,
        inside the barrier."""
        archived = JobArchived(job_id, self._now())
        await self._change(lambda: apply(self._state, archived), f"job {job_id}")

    async def catch_up(self, paused: SchedulePaused, what: str) -> None:
        """A pause or resume another manager committed, applied to our memory too (not
        journaled again), inside the barrier."""
        await self._change(lambda: apply(self._state, paused), what)

    async def set_quotas(self, event: QuotasSet) -> QuotasUsed:
        """Several managers: this manager's quotas of the limits that hold across the cluster
        (`workflow_manager.cluster.quotas`), inside the barrier; the work they release starts
        as its timers fire (journaled then). Answers where every quota stands."""
        commands: list[Command] = []

        def change() -> None:
            commands.extend(apply(self._state, event)[1])

        await self._change(change, "quotas of the limits")
        used = QuotasUsed(())
        for command in commands:
            if isinstance(command, QuotasUsed):
                used = command
            else:
                self._carry_out(command)
        return used

    async def _change(self, change: Callable[[], object], what: str) -> None:
        """Change memory outside `process` inside the same barrier: if `change` fails, memory
        is rebuilt and MessageFailed raised, naming `what`."""
        while self._restoring is not None:
            await self._restoring.wait()
        try:
            change()
        except Exception as exc:
            await self.rebuild_after_failure()
            raise MessageFailed(what, exc) from exc

    async def rebuild_after_failure(self) -> None:
        """Make memory agree with the journal again, after a message failed half-way through
        the pipeline: every batch appended before it is committed, then the running jobs are
        rebuilt by replaying the journal, as at a start, and their timers armed again.

        Events arriving meanwhile wait (`process`); a second failure waits for this one.
        Shielded: a handler cancelled meanwhile (aio-pika cancels those in flight when the
        connection drops) must not leave memory half rebuilt."""
        await asyncio.shield(self._rebuild())

    async def _rebuild(self) -> None:
        if self._restoring is not None:
            await self._restoring.wait()
            return
        self._restoring = asyncio.Event()
        try:
            await self._journal.flush()
            # Partitioned: the partitions whose jobs are in memory now (one being taken over
            # is replayed by its adoption).
            running = set(self._partitions) if self._partitioned else None
            self._state = await self._recovery.state(self._now(), running)
            self._timers.clear()
            self.arm_timers()
            self._recovered()
            log.warning("memory rebuilt from the journal: %d jobs", len(self._state.jobs))
        finally:
            self._restoring.set()
            self._restoring = None

    def _recovered(self) -> None:
        for observer in self._observers:
            observer.recovered(self._state.jobs.values())

    # -- timers ----------------------------------------------------------------------------

    def arm_timers(self) -> None:
        """Arm every timer of memory (after a recovery, a rebuild, an adoption)."""
        for key, due_at in self._state.timers.items():
            self._timers.arm(key, due_at)

    def close(self) -> None:
        """Stop the timers (journaled: the next start arms them again) and the ignored log."""
        self._timers.close()
        self._ignored.close()

    def _timer_due(self, key: str) -> None:
        if self._partitioned and key not in self._state.timers:
            return  # its job was handed over to another manager meanwhile
        task = asyncio.create_task(self._work.tracked(self._on_timer)(key))
        task.add_done_callback(_log_crash)

    async def _on_timer(self, key: str) -> None:
        try:
            _, sending = await self.process(TimerFired(key, self._now()))
        except MessageFailed as exc:
            # Armed again by the rebuild, it would fail again at once: it waits for a restart.
            self._timers.cancel(key)
            log.error("timer %s refused: %s", key, exc, exc_info=exc.cause)
            return
        await sending


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
