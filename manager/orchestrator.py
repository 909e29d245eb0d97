"""The driver loop: messages in, through the pure engine, commands out to RabbitMQ.

This is the one place that wires the engine to the transport. Each inbound message becomes
an event; the engine's commands are carried out; only then is the message acked, so a crash
in between means RabbitMQ redelivers it (and the engine ignores what it has already seen).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aio_pika.abc import AbstractIncomingMessage
from pydantic import BaseModel, ConfigDict, Field

from manager.config import Workflow
from manager.engine import (
    Command,
    Dispatch,
    EngineState,
    Event,
    Ignored,
    JobFinished,
    JobRejected,
    JobStarted,
    JobSubmitted,
    NotifyOutcome,
    apply,
)
from manager.errors import (
    BrokerError,
    DuplicateJob,
    InvalidJobId,
    InvalidPayload,
    SubmitError,
    UnknownWorkflow,
    Unroutable,
)
from manager.transport import (
    DEFAULT_QUEUE,
    HEADER_ATTEMPT,
    HEADER_STATUS,
    HEADER_WORKFLOW,
    MAX_MESSAGE_BYTES,
    Broker,
    TriggerError,
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


class ManagerSettings(BaseModel):
    """How the manager talks to RabbitMQ."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    amqp_url: str = Field(default="amqp://guest:guest@localhost:5672/", repr=False)
    queue: str = DEFAULT_QUEUE
    prefetch: int = Field(default=256, ge=1)
    max_message_bytes: int = Field(default=MAX_MESSAGE_BYTES, ge=1024)
    publish_retry_s: float = Field(default=1.0, gt=0)


def step_queues(workflows: Iterable[Workflow]) -> list[str]:
    """Every queue a step of these workflows (or of their tasks) sends requests to."""
    queues: dict[str, None] = {}
    for workflow in workflows:
        for flow in (workflow, *workflow.tasks):
            queues.update((step.queue_name, None) for step in flow.steps if step.task is None)
    return list(queues)


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON, as every message body is sent."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class Orchestrator:
    """Runs jobs: owns the engine state and the broker connection."""

    def __init__(
        self,
        workflows: Mapping[str, Workflow],
        settings: ManagerSettings,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.workflows = dict(workflows)
        self.settings = settings
        self._clock = clock
        self._new_id = new_id
        self._state = EngineState.from_workflows(self.workflows)
        self._broker = Broker(settings.amqp_url, settings.prefetch)
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._stopping = False

    def __repr__(self) -> str:
        jobs = self._state.jobs
        running = sum(job.is_running for job in jobs.values())
        return f"<Orchestrator queue={self.settings.queue} jobs={len(jobs)} running={running}>"

    @property
    def state(self) -> EngineState:
        """The engine state: every job by id. Read it; never change it from outside."""
        return self._state

    @property
    def connected(self) -> bool:
        """True while connected to RabbitMQ."""
        return self._broker.connected

    # -- life cycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, declare the reply, trigger and step queues, and start consuming."""
        queue = self.settings.queue
        await self._broker.connect()
        await self._broker.declare(
            [queue, trigger_queue(queue), *step_queues(self.workflows.values())]
        )
        await self._broker.consume(queue, self._tracked(self._on_reply))
        await self._broker.consume(trigger_queue(queue), self._tracked(self._on_trigger))
        log.info("consuming replies on '%s' and triggers on '%s'", queue, trigger_queue(queue))

    async def stop(self) -> None:
        """Stop consuming, finish the messages in hand, then close the connection."""
        self._stopping = True
        await self._broker.stop_consuming()
        await self._idle.wait()
        await self._broker.close()
        log.info("stopped")

    # -- submissions -------------------------------------------------------------------

    async def submit(self, workflow: str, payload: Any, job_id: str | None = None) -> str:
        """Start a job now (the HTTP API's way in); returns its id or raises a SubmitError."""
        job_id = job_id if job_id is not None else self._new_id()
        canonical = _canonical(job_id)
        if canonical is not None and canonical in self._state.jobs:
            raise DuplicateJob(f"a job with id {canonical} already exists")
        commands = self._apply(JobSubmitted(job_id, workflow, payload, self._clock()))
        for command in commands:
            if isinstance(command, JobRejected):
                raise _REJECTIONS.get(command.kind, SubmitError)(command.reason)
        await self._execute(commands)
        return canonical or job_id

    # -- inbound messages --------------------------------------------------------------

    def _tracked(self, handler: Callable[[AbstractIncomingMessage], Any]) -> Any:
        """Wrap a consumer so stop() can wait for the messages in hand."""

        async def run(message: AbstractIncomingMessage) -> None:
            self._in_flight += 1
            self._idle.clear()
            try:
                await handler(message)
            finally:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.set()

        return run

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        log.debug("reply %s %d bytes", message.correlation_id, len(message.body))
        event = reply_event(message, self._clock(), self.settings.max_message_bytes)
        await self._execute(self._apply(event))
        await _ack(message)

    async def _on_trigger(self, message: AbstractIncomingMessage) -> None:
        received_id = message.correlation_id
        try:
            event = trigger_event(
                message, self._clock(), self._new_id(), self.settings.max_message_bytes
            )
        except TriggerError as exc:
            await self._reject_trigger(received_id, message.reply_to, str(exc))
            await _ack(message)
            return
        log.debug("trigger %s for %s", event.job_id, event.workflow)
        commands = self._apply(event)
        for command in commands:
            if isinstance(command, JobRejected):
                await self._reject_trigger(received_id, command.reply_to, command.reason)
        await self._execute(c for c in commands if not isinstance(c, JobRejected))
        await _ack(message)

    async def _reject_trigger(self, job_id: str | None, reply_to: str | None, reason: str) -> None:
        log.warning("trigger rejected: job=%s reason=%s", job_id, reason)
        if reply_to:
            headers = {HEADER_STATUS: "rejected"}
            await self._publish(reply_to, encode_json({"error": reason}), job_id, headers=headers)

    # -- engine and commands -----------------------------------------------------------

    def _apply(self, event: Event) -> list[Command]:
        _, commands = apply(self._state, event)
        return commands

    async def _execute(self, commands: Iterable[Command]) -> None:
        """Carry out the engine's commands: publish in parallel, log the rest."""
        publishes = []
        for command in commands:
            if isinstance(command, Dispatch):
                publishes.append(self._dispatch(command))
            elif isinstance(command, NotifyOutcome):
                publishes.append(self._notify(command))
            else:
                _log_command(command)
        if publishes:
            await asyncio.gather(*publishes)

    async def _dispatch(self, command: Dispatch) -> None:
        log.debug(
            "dispatch job=%s step=%s attempt=%d", command.job_id, command.step, command.attempt
        )
        headers = {HEADER_WORKFLOW: command.workflow, HEADER_ATTEMPT: command.attempt}
        await self._publish(
            command.queue,
            encode_json(command.body),
            command.correlation_id,
            reply_to=self.settings.queue,
            headers=headers,
            message_id=command.message_id,
            redeclare=True,
        )

    async def _notify(self, command: NotifyOutcome) -> None:
        headers = {HEADER_STATUS: str(command.status)}
        await self._publish(
            command.reply_to, encode_json(command.body), command.job_id, headers=headers
        )

    async def _publish(
        self,
        queue: str,
        body: bytes,
        correlation_id: str | None,
        *,
        reply_to: str | None = None,
        headers: Mapping[str, Any] | None = None,
        message_id: str | None = None,
        redeclare: bool = False,
    ) -> None:
        """Publish until the broker confirms: a lost connection is retried, never dropped."""
        while True:
            try:
                await self._broker.publish(
                    queue,
                    body,
                    correlation_id=correlation_id,
                    reply_to=reply_to,
                    headers=headers,
                    message_id=message_id,
                )
                return
            except Unroutable as exc:
                if not redeclare:
                    log.warning("dropped message for '%s': %s", queue, exc)
                    return
                # A step queue deleted under us: declare it again so the request waits there.
                log.warning("step queue '%s' vanished; declaring it again", queue)
                redeclare = False
                await self._redeclare(queue)
            except BrokerError as exc:
                log.warning("publish to '%s' failed, retrying: %s", queue, exc)
                await asyncio.sleep(self.settings.publish_retry_s)

    async def _redeclare(self, queue: str) -> None:
        try:
            await self._broker.declare([queue])
        except BrokerError as exc:
            log.warning("declaring '%s' failed: %s", queue, exc)


def _canonical(job_id: str) -> str | None:
    try:
        return str(uuid.UUID(job_id))
    except (ValueError, AttributeError, TypeError):
        return None


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
            level,
            "job %s job=%s workflow=%s%s",
            command.status,
            command.job_id,
            command.workflow,
            detail,
        )
    elif isinstance(command, Ignored):
        log.warning("ignored %s: %s", command.subject, command.reason)
