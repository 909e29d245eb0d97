"""The driver loop: messages in, through the pure engine, into the journal, commands out.

This is the one place that wires the engine to the journal and the broker. For each inbound
message: decode it into an event, apply it, append the event and its effects to the journal,
and once that group is committed ack the message and publish the outbound messages (each
marked sent in the journal when the broker confirms it). A crash at any point loses nothing:
an unacked message is redelivered (and the engine ignores what it has seen), an unconfirmed
outbound message is published again by recovery. Recovery replays the journal of the running
jobs through the same engine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aio_pika.abc import AbstractIncomingMessage
from pydantic import BaseModel, ConfigDict, Field

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
)
from manager.engine import timers as timer_keys
from manager.engine.replies import split_correlation_id
from manager.engine.snapshot import forget, restore
from manager.errors import (
    BrokerError,
    DuplicateJob,
    InvalidJobId,
    InvalidPayload,
    JobConflict,
    JobNotFound,
    JournalError,
    SubmitError,
    UnknownWorkflow,
    Unroutable,
)
from manager.journal import Batch, EventKind, Journal
from manager.journal.entries import encode_json, notice_msg_id, outbound_row, record, to_event
from manager.outbox import Outbox
from manager.transport import (
    DEFAULT_QUEUE,
    HEADER_STATUS,
    MAX_MESSAGE_BYTES,
    Broker,
    TriggerError,
    dead_letter,
    dead_letter_queue,
    reply_event,
    trigger_event,
    trigger_queue,
)

__all__ = ["ManagerSettings", "Orchestrator", "step_queues"]

log = logging.getLogger(__name__)

_REJECTIONS: dict[str, type[SubmitError]] = {
    "invalid-id": InvalidJobId,
    "unknown-workflow": UnknownWorkflow,
    "invalid-payload": InvalidPayload,
}
_DAY_S = 86_400.0


class ManagerSettings(BaseModel):
    """How the manager talks to RabbitMQ and keeps its journal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    amqp_url: str = Field(default="amqp://guest:guest@localhost:5672/", repr=False)
    queue: str = DEFAULT_QUEUE
    prefetch: int = Field(default=256, ge=1)
    max_message_bytes: int = Field(default=MAX_MESSAGE_BYTES, ge=1024)
    publish_retry_s: float = Field(default=1.0, gt=0)
    retention_days: float = Field(default=7.0, gt=0)
    retention_every_s: float = Field(default=3600.0, gt=0)


def step_queues(workflows: Iterable[Workflow]) -> list[str]:
    """Every queue a step of these workflows (their tasks and branches too) sends requests to."""
    queues: dict[str, None] = {}
    for workflow in workflows:
        for flow in (workflow, *workflow.tasks, *workflow.branches.values()):
            queues.update((step.queue_name, None) for step in flow.steps if step.task is None)
    return list(queues)


def _canonical(job_id: Any) -> str | None:
    try:
        return str(uuid.UUID(job_id))
    except (ValueError, AttributeError, TypeError):
        return None


class Orchestrator:
    """Runs jobs: owns the engine state, the journal and the broker connection."""

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
        self._clock = clock
        self._new_id = new_id
        self._state = EngineState.from_workflows(self.workflows)
        self._broker = Broker(settings.amqp_url, settings.prefetch)
        self._outbox = Outbox(self._broker, journal, clock, self._fail, settings.publish_retry_s)
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.failed = asyncio.Event()
        self.failure: BaseException | None = None
        self._retention: asyncio.Task[None] | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._stopping = False

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
        return self._broker.connected

    # -- life cycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Recover from the journal, connect, publish what was pending, then start consuming."""
        started = time.perf_counter()
        pending = await self._recover()
        await self._broker.connect()
        queue = self.settings.queue
        await self._broker.declare(
            [
                queue,
                trigger_queue(queue),
                dead_letter_queue(queue),
                *step_queues(self.workflows.values()),
            ]
        )
        await self._outbox.publish(pending)
        for key, due_at in self._state.timers.items():
            self._arm(key, due_at)
        await self._broker.consume(queue, self._tracked(self._on_reply))
        await self._broker.consume(trigger_queue(queue), self._tracked(self._on_trigger))
        self._retention = asyncio.create_task(self._keep_retention(), name="retention")
        log.info(
            "consuming replies on '%s' and triggers on '%s' (%d running jobs recovered, "
            "%d messages re-published, ready in %.2fs)",
            queue, trigger_queue(queue), len(self._state.jobs), len(pending),
            time.perf_counter() - started,
        )  # fmt: skip

    async def stop(self) -> None:
        """Stop consuming, finish the messages in hand, then close the connection and journal."""
        self._stopping = True
        if self._retention is not None:
            self._retention.cancel()
        for handle in self._timers.values():
            handle.cancel()  # journaled: the next start arms them again
        self._timers.clear()
        await self._broker.stop_consuming()
        await self._idle.wait()
        await self._broker.close()
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

    async def _recover(self) -> list[Any]:
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

    # -- submissions -------------------------------------------------------------------

    async def submit(self, workflow: str, payload: Any, job_id: str | None = None) -> str:
        """Start a job now (the HTTP API's way in); returns its id or raises a SubmitError."""
        job_id = job_id if job_id is not None else self._new_id()
        canonical = _canonical(job_id)
        if canonical is not None and await self._job_exists(canonical):
            raise DuplicateJob(f"a job with id {canonical} already exists")
        event = self._pinned(JobSubmitted(job_id, workflow, payload, self._clock()))
        commands = self._apply(event)
        for command in commands:
            if isinstance(command, JobRejected):
                raise _REJECTIONS.get(command.kind, SubmitError)(command.reason)
        try:
            outbound = await self._commit(event, commands)
        except JournalError as exc:
            self._fail(exc)
            raise
        await self._outbox.publish(outbound)
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

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level jobs of a workflow by status (finished ones since `finished_since`)."""
        return await self.journal.workflow_jobs(name, finished_since)

    async def cancel(self, job_id: str) -> Job:
        """Cancel a running job; JobNotFound or JobConflict (e.g. it has ended) otherwise."""
        canonical = _canonical(job_id) or job_id
        if canonical not in self._state.jobs:
            row = await self.journal.job(canonical)
            if row is not None:
                raise JobConflict(
                    f"job {canonical} is already {row.status}; only a running job can be cancelled"
                )
        return await self._control(CancelRequested(canonical, self._clock()))

    async def retry(self, job_id: str) -> Job:
        """Run a failed job again from where it failed; JobNotFound or JobConflict otherwise."""
        canonical = _canonical(job_id) or job_id
        if canonical not in self._state.jobs:
            await self._rehydrate(canonical)
        return await self._control(RetryRequested(canonical, self._clock()))

    async def _rehydrate(self, job_id: str) -> None:
        """Bring a finished job back into memory by replaying its journal (to retry it)."""
        row = await self.journal.job(job_id)
        if row is None or row.root_id in self._state.jobs:
            return
        for event_row in await self.journal.replay_rows([row.root_id]):
            apply(self._state, to_event(event_row))

    async def _control(self, event: CancelRequested | RetryRequested) -> Job:
        commands = self._apply(event)
        refused = next((c for c in commands if isinstance(c, Refused)), None)
        if refused is not None:
            raise (JobNotFound if refused.kind == "not-found" else JobConflict)(refused.reason)
        job = self._state.jobs[event.job_id]
        try:
            outbound = await self._commit(event, commands)
        except JournalError as exc:
            self._fail(exc)
            raise
        await self._outbox.publish(outbound)
        return job

    async def _job_exists(self, job_id: str) -> bool:
        return job_id in self._state.jobs or await self.journal.job(job_id) is not None

    def _pinned(self, event: JobSubmitted) -> JobSubmitted:
        """Pin a new submission to today's definition, so a replay runs the same one."""
        definition = self._state.current.get(event.workflow)
        return dataclasses.replace(event, definition=definition) if definition else event

    # -- inbound messages --------------------------------------------------------------

    def _tracked(self, handler: Callable[[Any], Any]) -> Any:
        """Wrap a consumer so stop() can wait for the messages in hand."""

        async def run(message: Any) -> None:
            if self.failed.is_set():
                return  # left unacked: RabbitMQ gives it to the next manager
            self._in_flight += 1
            self._idle.clear()
            try:
                await handler(message)
            except JournalError as exc:
                self._fail(exc)
            finally:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.set()

        return run

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        log.debug("reply %s %d bytes", message.correlation_id, len(message.body))
        if split_correlation_id(message.correlation_id or "") is None:
            reason = (
                f"reply has correlation id {message.correlation_id!r}; "
                "expected '<job-uuid>:<step-name>'"
            )
            await self._dead_letter(message, reason, self.settings.queue)
            await _ack(message)
            return
        event = reply_event(message, self._clock(), self.settings.max_message_bytes)
        outbound = await self._commit(event, self._apply(event))
        await _ack(message)
        await self._outbox.publish(outbound)

    async def _on_trigger(self, message: AbstractIncomingMessage) -> None:
        try:
            event = trigger_event(
                message, self._clock(), self._new_id(), self.settings.max_message_bytes
            )
        except TriggerError as exc:
            await self._reject_trigger(message, str(exc))
            await _ack(message)
            return
        log.debug("trigger %s for %s", event.job_id, event.workflow)
        if await self._answer_finished(event):
            await _ack(message)
            return
        event = self._pinned(event)
        commands = self._apply(event)
        rejection = next((c for c in commands if isinstance(c, JobRejected)), None)
        if rejection is not None:
            await self._reject_trigger(message, rejection.reason)
            await _ack(message)
            return
        outbound = await self._commit(event, commands)
        await _ack(message)
        await self._outbox.publish(outbound)

    async def _answer_finished(self, event: JobSubmitted) -> bool:
        """A trigger for a job that ended and left memory: answer from the journal, once more."""
        canonical = _canonical(event.job_id)
        if canonical is None or canonical in self._state.jobs:
            return False
        row = await self.journal.job(canonical)
        if row is None:
            return False
        log.info("duplicate trigger for finished job=%s", canonical)
        if event.reply_to:
            body = row.result if row.status == "completed" else {"error": row.error}
            notice = outbound_row(
                event.at, EventKind.NOTIFIED, event.reply_to, canonical, encode_json(body or {}),
                {HEADER_STATUS: row.status}, notice_msg_id(canonical, event.reply_to),
                job_id=canonical, root_id=row.root_id,
            )  # fmt: skip
            await self.journal.append(Batch(events=[notice]))
            await self._outbox.publish([notice])
        return True

    async def _reject_trigger(self, message: AbstractIncomingMessage, reason: str) -> None:
        """Dead-letter a trigger that cannot become a job, and tell its sender why."""
        job_id, reply_to = message.correlation_id, message.reply_to
        log.warning("trigger rejected: job=%s reason=%s", job_id, reason)
        await self._dead_letter(message, reason, trigger_queue(self.settings.queue))
        if reply_to:
            headers = {HEADER_STATUS: "rejected"}
            body = encode_json({"error": reason})
            # Not journaled: the trigger is acked only after this, so a crash means it comes back.
            row = outbound_row(
                self._clock(), "rejected", reply_to, job_id or "", body, headers, None
            )
            await self._outbox.publish([row])

    async def _dead_letter(
        self, message: AbstractIncomingMessage, reason: str, source: str
    ) -> None:
        """Keep a message that cannot be processed in `<queue>.dead`, with the reason."""
        target = dead_letter_queue(self.settings.queue)
        while True:
            try:
                await self._broker.publish_message(target, dead_letter(message, reason, source))
                log.warning("dead-lettered a message from '%s': %s", source, reason)
                return
            except Unroutable:
                await self._broker.declare([target])
            except BrokerError as exc:
                log.warning("dead-lettering to '%s' failed, retrying: %s", target, exc)
                await asyncio.sleep(self.settings.publish_retry_s)

    # -- engine and journal ------------------------------------------------------------

    def _apply(self, event: Event) -> list[Command]:
        _, commands = apply(self._state, event)
        return commands

    async def _commit(self, event: Event, commands: list[Command]) -> list[Any]:
        """Journal an applied event and its effects; returns the outbound rows to publish.

        The append happens right after `apply`, with no await in between, so the journal
        holds events in exactly the order the engine saw them.
        """
        batch, outbound = record(self._state, event, commands, self.settings.queue)
        await self.journal.append(batch)
        for command in commands:
            _log_command(command)
            if isinstance(command, StartTimer):
                self._arm(command.key, command.due_at)
            elif isinstance(command, CancelTimer):
                handle = self._timers.pop(command.key, None)
                if handle is not None:
                    handle.cancel()
            if isinstance(command, JobFinished) and command.parent_id is None:
                job = self._state.jobs.get(command.job_id)
                if job is not None and not job.is_running:
                    forget(self._state, job)  # its snapshot is in the journal now
        return outbound

    def _arm(self, key: str, due_at: float) -> None:
        """Deliver TimerFired(key) at `due_at`: a wall-clock time, kept in the journal's state."""
        if self._stopping:
            return
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        delay_s = max(0.0, due_at - self._clock())
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay_s, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        task = asyncio.create_task(self._tracked(self._on_timer)(key))
        task.add_done_callback(_log_crash)

    async def _on_timer(self, key: str) -> None:
        event = TimerFired(key, self._clock())
        outbound = await self._commit(event, self._apply(event))
        await self._outbox.publish(outbound)

    async def prune(self) -> int:
        """Delete finished jobs older than the retention period; returns how many went."""
        cutoff = self._clock() - self.settings.retention_days * _DAY_S
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


async def _ack(message: AbstractIncomingMessage) -> None:
    try:
        await message.ack()
    except Exception as exc:  # noqa: BLE001 - a closed channel redelivers; the engine dedups
        log.warning("ack of %s failed (it will be redelivered): %s", message.correlation_id, exc)


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
