"""Messages in: worker replies and job triggers from RabbitMQ, turned into engine events.

Each message is acked only after its effect is committed to the journal. The requests a reply
causes are published while that commit is in flight: if the manager dies before the commit,
the unacked reply comes back and makes the same requests again (same message ids). A message
that cannot be processed at all is moved to the dead-letter queue with the reason (and a
rejected trigger's sender is told why), never dropped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aio_pika.abc import AbstractIncomingMessage

from manager.engine import JobRejected, JobSubmitted
from manager.engine.replies import split_correlation_id
from manager.errors import BrokerError, Unroutable
from manager.journal import Batch, EventKind
from manager.journal.entries import encode_json, notice_msg_id, outbound_row
from manager.transport import (
    HEADER_STATUS,
    TriggerError,
    dead_letter,
    dead_letter_queue,
    reply_event,
    trigger_event,
    trigger_queue,
)

if TYPE_CHECKING:
    from manager.orchestrator import Orchestrator

__all__ = ["Intake"]

log = logging.getLogger(__name__)


class Intake:
    """The consumers of the reply queue and the trigger queue."""

    def __init__(self, orchestrator: Orchestrator) -> None:
        self._orchestrator = orchestrator
        self._settings = orchestrator.settings

    async def on_reply(self, message: AbstractIncomingMessage) -> None:
        """A worker's reply: journal its effect, ack it, publish what it caused."""
        log.debug("reply %s %d bytes", message.correlation_id, len(message.body))
        if split_correlation_id(message.correlation_id or "") is None:
            reason = (
                f"reply has correlation id {message.correlation_id!r}; "
                "expected '<job-uuid>:<step-name>'"
            )
            await self._dead_letter(message, reason, self._settings.queue)
            self._ack(message)
            return
        orchestrator = self._orchestrator
        event = reply_event(message, orchestrator.now(), self._settings.max_message_bytes)
        _, sending = await orchestrator.handle_sending(event)
        self._ack(message)
        # Shielded: if the connection drops now, aio-pika cancels this handler, but the
        # committed messages still go out once it is back.
        await asyncio.shield(sending)

    async def on_trigger(self, message: AbstractIncomingMessage) -> None:
        """A job trigger: start the job (or answer a duplicate), or dead-letter it with why."""
        orchestrator = self._orchestrator
        try:
            event = trigger_event(
                message, orchestrator.now(), orchestrator.new_id(), self._settings.max_message_bytes
            )
        except TriggerError as exc:
            await self._reject(message, str(exc))
            self._ack(message)
            return
        log.debug("trigger %s for %s", event.job_id, event.workflow)
        # Only a sender-chosen id can name a job that already ran; a new id cannot.
        if message.correlation_id and await self._answer_finished(event):
            self._ack(message)
            return
        event = orchestrator.pinned(event)
        if message.correlation_id:
            # The sender named the job: a redelivery would make the same job and messages.
            commands, sending = await orchestrator.handle_sending(event)
        else:
            # A job id of ours is new each time: nothing goes out before the journal has it.
            commands, outbound = await orchestrator.handle(event)
            sending = asyncio.ensure_future(orchestrator.publish(outbound))
        rejection = next((c for c in commands if isinstance(c, JobRejected)), None)
        if rejection is not None:
            await self._reject(message, rejection.reason)
        self._ack(message)
        await asyncio.shield(sending)  # as in on_reply

    async def _answer_finished(self, event: JobSubmitted) -> bool:
        """A trigger for a job that ended and left memory: answer from the journal, once more."""
        orchestrator = self._orchestrator
        row = await orchestrator.finished_row(event.job_id)
        if row is None:
            return False
        log.info("duplicate trigger for finished job=%s", row.id)
        if event.reply_to:
            body = row.result if row.status == "completed" else {"error": row.error}
            notice = outbound_row(
                event.at, EventKind.NOTIFIED, event.reply_to, row.id, encode_json(body or {}),
                {HEADER_STATUS: row.status}, notice_msg_id(row.id, event.reply_to),
                job_id=row.id, root_id=row.root_id,
            )  # fmt: skip
            await orchestrator.journal.append(Batch(events=[notice]))
            await orchestrator.publish([notice])
        return True

    def _ack(self, message: AbstractIncomingMessage) -> None:
        # Only after the message's effect is committed: a crash before it means redelivery.
        self._orchestrator.broker.ack(message)

    async def _reject(self, message: AbstractIncomingMessage, reason: str) -> None:
        """Dead-letter a trigger that cannot become a job, and tell its sender why."""
        job_id, reply_to = message.correlation_id, message.reply_to
        log.warning("trigger rejected: job=%s reason=%s", job_id, reason)
        await self._dead_letter(message, reason, trigger_queue(self._settings.queue))
        if reply_to:
            # Not journaled: the trigger is acked only after this, so a crash means it comes back.
            answer = outbound_row(
                self._orchestrator.now(), "rejected", reply_to, job_id or "",
                encode_json({"error": reason}), {HEADER_STATUS: "rejected"}, None,
            )  # fmt: skip
            await self._orchestrator.publish([answer])

    async def _dead_letter(
        self, message: AbstractIncomingMessage, reason: str, source: str
    ) -> None:
        """Keep a message that cannot be processed in `<queue>.dead`, with the reason."""
        broker = self._orchestrator.broker
        target = dead_letter_queue(self._settings.queue)
        while True:
            try:
                await broker.publish_message(target, dead_letter(message, reason, source))
                log.warning("dead-lettered a message from '%s': %s", source, reason)
                return
            except Unroutable:
                await broker.declare([target])
            except BrokerError as exc:
                log.warning("dead-lettering to '%s' failed, retrying: %s", target, exc)
                await asyncio.sleep(self._settings.publish_retry_s)
