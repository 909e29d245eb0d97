"""The driver loop: events through the pure engine, into the journal, commands out.

This is the one place that wires the engine to the journal, the broker and the timers.
For each event (a message from `manager.intake`, a request from the API, a timer): apply
it, append it and its effects to the journal, and once that group is committed publish the
outbound messages (each marked sent in the journal when the broker confirms it). A crash at
any point loses nothing: an unacked message is redelivered (and the engine ignores what it
has seen), an unconfirmed outbound message is published again by recovery. Recovery
replays the journal of the running jobs through the same engine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from manager.config import Workflow
from manager.engine import (
    CancelRequested,
    CancelTimer,
    Command,
    EngineState,
    Event,
    Ignored,
    Job,
    JobFinished,
    JobRejected,
    JobStarted,
    JobSubmitted,
    Refused,
    RetryRequested,
    StartTimer,
    TimerFired,
    apply,
    canonical_uuid,
)
from manager.engine import timers as timer_keys
from manager.engine.snapshot import forget, restore
from manager.errors import (
    DuplicateJob,
    InvalidJobId,
    InvalidPayload,
    JobConflict,
    JobNotFound,
    JournalError,
    SubmitError,
    UnknownWorkflow,
)
from manager.intake import Intake
from manager.journal import EventRow, JobRow, Journal
from manager.journal.entries import record, to_event
from manager.outbox import Outbox
from manager.settings import ManagerSettings, step_queues
from manager.timekeeper import Timekeeper
from manager.transport import Broker, dead_letter_queue, trigger_queue

__all__ = ["ManagerSettings", "Orchestrator", "step_queues"]

log = logging.getLogger(__name__)

_REJECTIONS: dict[str, type[SubmitError]] = {
    "invalid-id": InvalidJobId,
    "unknown-workflow": UnknownWorkflow,
    "invalid-payload": InvalidPayload,
}
_DAY_S = 86_400.0


class Orchestrator:
    """Runs jobs: owns the engine state, the journal, the broker connection and the timers."""

    def __init__(
        self,
        workflows: Mapping[str, Workflow],
        settings: ManagerSettings,
        journal: Journal,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.workflows = dict(workflows)
        self.settings = settings
        self.journal = journal
        self.now = clock
        self.new_id = new_id
        self.broker = Broker(settings.amqp_url, settings.prefetch)
        self.failed = asyncio.Event()
        self.failure: BaseException | None = None
        self._state = EngineState.from_workflows(self.workflows)
        self._outbox = Outbox(self.broker, journal, clock, self._fail, settings.publish_retry_s)
        self._timers = Timekeeper(clock, self._timer_due)
        self._intake = Intake(self)
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._retention: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        jobs = self._state.jobs
        running = sum(job.is_running for job in jobs.values())
        return f"<Orchestrator queue={self.settings.queue} jobs={len(jobs)} running={running}>"

    @property
    def state(self) -> EngineState:
        """The engine state: every job in memory by id. Read it; never change it from outside."""
        return self._state

    @property
    def connected(self) -> bool:
        """True while connected to RabbitMQ."""
        return self.broker.connected

    # -- life cycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Recover from the journal, connect, publish what was pending, then start consuming."""
        started = time.perf_counter()
        pending = await self._recover()
        await self.broker.connect()
        queue = self.settings.queue
        await self.broker.declare(
            [
                queue,
                trigger_queue(queue),
                dead_letter_queue(queue),
                *step_queues(self.workflows.values()),
            ]
        )
        await self._outbox.publish(pending)
        self.broker.watch(self._restored)
        for key, due_at in self._state.timers.items():
            self._timers.arm(key, due_at)
        await self.broker.consume(queue, self._tracked(self._intake.on_reply))
        await self.broker.consume(trigger_queue(queue), self._tracked(self._intake.on_trigger))
        self._retention = asyncio.create_task(self._keep_retention(), name="retention")
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
        self._timers.close()  # journaled: the next start arms them again
        await self.broker.stop_consuming()
        await self._idle.wait()
        await self.broker.close()
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

    async def _recover(self) -> list[EventRow]:
        """Rebuild running jobs by replaying their journal; returns outbound rows to re-publish."""
        await self.journal.save_definitions(
            (wf.content_hash, wf.name, wf.model_dump_json(by_alias=True, exclude_defaults=True))
            for wf in self.workflows.values()
        )
        stored = await self.journal.definitions()
        pinned = [Workflow.model_validate_json(text) for _, text in stored.values()]
        self._state = EngineState.from_workflows(self.workflows, pinned)
        roots = await self.journal.running_roots()
        for row in await self.journal.replay_rows(roots):
            apply(self._state, to_event(row))
        return await self.journal.pending_outbound()

    async def _restored(self) -> None:
        """After a reconnect: publish what the journal holds as unconfirmed.

        aio-pika cancels the handlers in flight when the connection drops; one cancelled
        after its commit leaves its messages journaled but unpublished, until now.
        """
        pending = await self.journal.pending_outbound()
        if pending:
            log.info("re-publishing %d unconfirmed messages after the reconnect", len(pending))
        await self._tracked(self.publish)(pending)

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

    # -- events ------------------------------------------------------------------------

    async def handle(self, event: Event) -> tuple[list[Command], list[EventRow]]:
        """Apply an event and journal it with its effects (unless it was refused).

        Returns the commands and the outbound rows, to publish once the caller has acked
        what it must. The append follows `apply` with no await in between, so the journal
        holds events in exactly the order the engine saw them.
        """
        commands, outbound, committed = self._apply(event)
        await self._committed(commands, committed)
        return commands, outbound

    async def handle_sending(self, event: Event) -> tuple[list[Command], asyncio.Future[None]]:
        """Like `handle`, but the event's messages go out while its commit is in flight.

        Returns once the commit is durable, with the commands and the publishing under way.
        Only for an event whose message is acked after this returns, and whose redelivery
        after a crash yields the very same messages (a reply; a trigger naming its own job
        id): then a crash before the commit just sends them again, with the same message ids.
        Each level of a DAG saves the wait for one commit.
        """
        commands, outbound, committed = self._apply(event)
        sending = asyncio.ensure_future(self.publish(outbound))
        await self._committed(commands, committed)
        return commands, sending

    def _apply(self, event: Event) -> tuple[list[Command], list[EventRow], asyncio.Future[None]]:
        """Apply and queue the journal write, with no await in between (the journal's order)."""
        _, commands = apply(self._state, event)
        if any(isinstance(c, JobRejected | Refused) for c in commands):
            nothing: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            nothing.set_result(None)
            return commands, [], nothing
        batch, outbound = record(self._state, event, commands, self.settings.queue)
        return commands, outbound, self.journal.append(batch)

    async def _committed(self, commands: list[Command], committed: asyncio.Future[None]) -> None:
        """Wait for the journal write, then carry out what the commands ask of the manager."""
        try:
            await committed
        except JournalError as exc:
            self._fail(exc)
            raise
        for command in commands:
            self._carry_out(command)

    def _carry_out(self, command: Command) -> None:
        """What a command asks of the manager itself, once its event is journaled."""
        _log_command(command)
        if isinstance(command, StartTimer):
            self._timers.arm(command.key, command.due_at)
        elif isinstance(command, CancelTimer):
            self._timers.cancel(command.key)
        elif isinstance(command, JobFinished) and command.parent_id is None:
            job = self._state.jobs.get(command.job_id)
            if job is not None and job.is_settled:
                forget(self._state, job)  # its snapshot is in the journal now

    async def publish(self, rows: Iterable[EventRow]) -> None:
        """Publish outbound rows with confirms; each is marked sent in the journal."""
        await self._outbox.publish(rows)

    def pinned(self, event: JobSubmitted) -> JobSubmitted:
        """Pin a new submission to today's definition, so a replay runs the same one."""
        definition = self._state.current.get(event.workflow)
        return dataclasses.replace(event, definition=definition) if definition else event

    def _timer_due(self, key: str) -> None:
        task = asyncio.create_task(self._tracked(self._on_timer)(key))
        task.add_done_callback(_log_crash)

    async def _on_timer(self, key: str) -> None:
        _, outbound = await self.handle(TimerFired(key, self.now()))
        await self.publish(outbound)

    # -- the API's requests --------------------------------------------------------------

    async def submit(self, workflow: str, payload: Any, job_id: str | None = None) -> str:
        """Start a job now (the HTTP API's way in); returns its id or raises a SubmitError."""
        chosen = job_id is not None  # a new id of ours cannot name an existing job
        job_id = job_id if job_id is not None else self.new_id()
        canonical = canonical_uuid(job_id)
        if (
            chosen
            and canonical is not None
            and (
                canonical in self._state.jobs
                or canonical in self._state.gone  # a completed child, its row maybe not yet written
                or await self.journal.job(canonical) is not None
            )
        ):
            raise DuplicateJob(f"a job with id {canonical} already exists")
        commands, outbound = await self.handle(
            self.pinned(JobSubmitted(job_id, workflow, payload, self.now()))
        )
        for command in commands:
            if isinstance(command, JobRejected):
                raise _REJECTIONS.get(command.kind, SubmitError)(command.reason)
        await self.publish(outbound)
        return canonical or job_id

    async def find_job(self, job_id: str) -> Job | None:
        """A job in memory, or a finished one restored from its journal snapshot."""
        job = self._state.jobs.get(job_id)
        if job is not None:
            return job
        row = await self.journal.job(job_id)
        if row is None or row.snapshot is None:
            return None
        workflow = self._state.definitions.get(row.definition)
        if workflow is None:
            stored = await self.journal.definitions([row.definition])
            if row.definition not in stored:
                return None
            workflow = Workflow.model_validate_json(stored[row.definition][1])
        return restore(row.snapshot, workflow)

    async def finished_row(self, job_id: str) -> JobRow | None:
        """The journal row of a job that has ended and left memory, if `job_id` names one."""
        canonical = canonical_uuid(job_id)
        if canonical is None or canonical in self._state.jobs:
            return None
        return await self.journal.job(canonical)

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level jobs of a workflow by status (finished ones since `finished_since`)."""
        return await self.journal.workflow_jobs(name, finished_since)

    async def cancel(self, job_id: str) -> Job:
        """Cancel a running job; JobNotFound or JobConflict (e.g. it has ended) otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        row = await self.finished_row(canonical)
        if row is not None:
            raise JobConflict(
                f"job {canonical} is already {row.status}; only a running job can be cancelled"
            )
        return await self._control(CancelRequested(canonical, self.now()))

    async def retry(self, job_id: str) -> Job:
        """Run a failed job again from where it failed; JobNotFound or JobConflict otherwise."""
        canonical = canonical_uuid(job_id) or job_id
        row = await self.finished_row(canonical)
        if row is not None and row.root_id not in self._state.jobs:
            # It has left memory: replay its journal to bring it back, then retry it.
            for event_row in await self.journal.replay_rows([row.root_id]):
                apply(self._state, to_event(event_row))
        return await self._control(RetryRequested(canonical, self.now()))

    async def _control(self, event: CancelRequested | RetryRequested) -> Job:
        job = self._state.jobs.get(event.job_id)  # before: a job that settles leaves memory
        commands, outbound = await self.handle(event)
        refused = next((c for c in commands if isinstance(c, Refused)), None)
        if refused is not None or job is None:
            reason = refused.reason if refused else f"no job {event.job_id}"
            kind = refused.kind if refused else "not-found"
            raise (JobNotFound if kind == "not-found" else JobConflict)(reason)
        await self.publish(outbound)
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


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("timer handling failed", exc_info=task.exception())


def _log_command(command: Command) -> None:
    if isinstance(command, JobStarted):
        level = logging.INFO if command.parent_id is None else logging.DEBUG
        log.log(level, "job started job=%s workflow=%s", command.job_id, command.workflow)
    elif isinstance(command, JobFinished):
        level = logging.INFO if command.parent_id is None else logging.DEBUG
        detail = f" error={command.error}" if command.error else ""
        log.log(
            level, "job %s job=%s workflow=%s%s",
            command.status, command.job_id, command.workflow, detail,
        )  # fmt: skip
    elif isinstance(command, Ignored):
        log.warning("ignored %s: %s", command.subject, command.reason)
    elif isinstance(command, StartTimer):
        key = timer_keys.parse(command.key)
        if key is not None and key.is_retry:
            log.info(
                "retry scheduled job=%s step=%s attempt=%s at=%.3f",
                key.job_id, key.step, key.attempt, command.due_at,
            )  # fmt: skip
