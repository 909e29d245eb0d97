"""The deliveries in: each read by intake into an event and run through the pipeline, then acked.

`Deliveries` takes a worker's reply (`on_reply`), a job trigger (`on_trigger`), a signal
(`on_signal`), and (partitioned) a delivery of one of our partitions' queues (`on_partition`).
It acks each delivery only after its batch is committed. Its side of the barrier is `guarded`:
a delivery whose handling failed is refused alone (dead-lettered with the reason, its sender
told, acked); the pipeline has already made memory agree with the journal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from payload_refs.errors import PayloadRefError
from workflow_manager import intake
from workflow_manager.cluster import handoff
from workflow_manager.cluster.ours import OurTrees
from workflow_manager.cluster.partitioning import partition_queue
from workflow_manager.engine import JobSubmitted
from workflow_manager.errors import BrokerError, JournalError, MessageFailed
from workflow_manager.journal import Journal
from workflow_manager.notices import duplicate_reason, rejection_notice
from workflow_manager.observers import DeadLetterWatcher, Observer
from workflow_manager.outbox import Outbox
from workflow_manager.payloads.stage import PayloadRefs
from workflow_manager.pipeline import Pipeline
from workflow_manager.recorder import finished_notice
from workflow_manager.requests import ApiRequests
from workflow_manager.settings import ManagerSettings
from workflow_manager.textline import one_line
from workflow_manager.traces import new_trace_id
from workflow_manager.transport import (
    Delivery,
    Transport,
    dead_letter_queue,
    signal_queue,
    trigger_queue,
)

__all__ = ["Deliveries"]

log = logging.getLogger(__name__)


class Deliveries:
    """The handlers of the manager's queues: intake, the pipeline, the ack; refusals."""

    def __init__(
        self,
        pipeline: Pipeline,
        trees: OurTrees,
        requests: ApiRequests,
        settings: ManagerSettings,
        journal: Journal,
        transport: Transport,
        outbox: Outbox,
        clock: Callable[[], float],
        payloads: PayloadRefs,
        observers: Sequence[Observer] = (),
        *,
        partitioned: bool = False,
    ) -> None:
        self._pipeline = pipeline
        self._trees = trees
        self._requests = requests
        self._settings = settings
        self._journal = journal
        self._transport = transport
        self._outbox = outbox
        self._now = clock
        self._payloads = payloads
        self._watchers = tuple(o for o in observers if isinstance(o, DeadLetterWatcher))
        self._partitioned = partitioned

    def __repr__(self) -> str:
        return f"<Deliveries queue={self._settings.queue}>"

    # -- the barrier's side for deliveries -----------------------------------------------

    def guarded(self, handler: Callable[[Delivery], Awaitable[None]]) -> Callable[..., Any]:
        """Wrap a delivery handler in the barrier: whatever goes wrong handling one delivery
        refuses that delivery alone (`_refuse`); the manager goes on with the next.

        A journal or broker failure is not the message's: it is left to `InFlight.tracked`
        (the manager stops or rejoins) and to the broker's redelivery."""

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
        the pipeline rebuilt it (`Pipeline.process`), and nothing before the pipeline changes
        it."""
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
        self._transport.ack(delivery)

    def _kind_of(self, delivery: Delivery) -> str:
        """What a delivery is, by its queue: a trigger, a signal, or a worker's reply."""
        if delivery.queue == trigger_queue(self._settings.queue):
            return "trigger"
        if delivery.queue == signal_queue(self._settings.queue):
            return "signal"
        return handoff.handoff_kind(delivery) or "reply"

    # -- messages in ---------------------------------------------------------------------

    async def on_reply(self, delivery: Delivery) -> None:
        """A worker's reply: journal its effect, ack it, publish what it caused."""
        log.debug("reply %s %d bytes", delivery.correlation_id, len(delivery.body))
        limits = self._settings
        event = intake.reply_event(
            delivery, self._now(), limits.max_message_bytes, limits.max_json_depth
        )
        if isinstance(event, intake.Undeliverable):
            await self._dead_letter(delivery, event.reason, "bad_reply")
            self._transport.ack(delivery)
            return
        if self._payloads.concerns(event):
            event = await self._payloads.reply(event)
        # A redelivered reply makes the very same requests (same message ids): send them now.
        _, sending = await self._pipeline.process(event, early=True)
        self._transport.ack(delivery)  # only after the commit: a crash before means redelivery
        # Shielded: if the connection drops now, aio-pika cancels this handler, but the
        # committed messages still go out once it is back.
        await asyncio.shield(sending)

    async def on_trigger(self, delivery: Delivery) -> None:
        """A job trigger: start the job (or answer a duplicate), or dead-letter it with why.

        Partitioned, a trigger whose job goes to another manager's partition (by its key or
        its id: `OurTrees.placed`) is handed to it; one naming no job gets a new id.
        """
        new_id = self._trees.new_job_id()
        limits = self._settings
        event = intake.trigger_event(
            delivery, self._now(), new_id, limits.max_message_bytes, new_trace_id(),
            limits.max_json_depth,
        )  # fmt: skip
        # Only a sender-chosen id can name a job that already ran; a new id cannot.
        named = bool(delivery.correlation_id)
        # Partitioned, placing the job looks its id up: found new, no ended job is there to
        # answer for, and the journal need not be asked again (below).
        new = False
        if self._partitioned and not isinstance(event, intake.Undeliverable):
            event, new = await self._trees.placed(event, named)
            # Not `held`: a partition being handed over starts nothing new here, and one being
            # taken over has its jobs in memory only once its adoption is done.
            if event.partition is not None and event.partition not in self._trees.runs_now():
                chosen = None if named else event.job_id
                await self._hand_over(delivery, event.partition, handoff.TRIGGER, chosen)
                return
        if self._payloads.store is not None and not isinstance(event, intake.Undeliverable):
            new = False  # a job of that id may run and end while its payload is stored
            try:
                event = await self._payloads.submission(event, len(delivery.body))
            except PayloadRefError as exc:
                event = intake.Undeliverable(f"PayloadRefError: {exc}")
        if isinstance(event, intake.Undeliverable):
            await self._reject(delivery, event.reason, "invalid_trigger")
            if delivery.reply_to:
                await self._outbox.publish(
                    [rejection_notice(delivery.reply_to, delivery.correlation_id, event.reason)]
                )
            self._transport.ack(delivery)
            return
        log.debug("trigger %s for %s", event.job_id, event.workflow)
        if named and not new and await self._answer_finished(event):
            self._transport.ack(delivery)
            return
        # A job id of ours is new each time: nothing goes out before the journal has it. The
        # sender's own id makes a redelivery yield the same job and messages: send them now.
        result, sending = await self._pipeline.process(self._pipeline.pinned(event), early=named)
        if result.rejected is not None:
            rejected = result.rejected  # its answer is in `sending`
            await self._reject(delivery, rejected.reason, rejected.kind.replace("-", "_"))
        elif result.duplicate is not None:
            log.info(
                "duplicate trigger: %s", duplicate_reason(result.duplicate),
                extra={"job": result.duplicate.existing},
            )  # fmt: skip
        self._transport.ack(delivery)
        await asyncio.shield(sending)  # as in on_reply

    async def on_signal(self, delivery: Delivery) -> None:
        """A signal for a waiting step: apply it, or dead-letter it with why it cannot be."""
        limits = self._settings
        event = intake.signal_event(
            delivery, self._now(), limits.max_message_bytes, limits.max_json_depth
        )
        reason: str | None
        if isinstance(event, intake.Undeliverable):
            reason = event.reason
        elif (partition := await self._trees.foreign_partition(event.job_id)) is not None:
            await self._hand_over(delivery, partition, handoff.SIGNAL, None)
            return
        else:
            reason = await self._requests.finished_reason(event.job_id)
            if reason is None:
                try:
                    event = await self._requests.payload_signal(event)
                except PayloadRefError as exc:
                    reason = f"PayloadRefError: {exc}"
            if reason is None:
                result, sending = await self._pipeline.process(event)
                reason = result.refused.reason if result.refused is not None else None
        if reason is not None:
            log.warning(
                "signal refused: %s reason=%s", delivery.correlation_id, one_line(reason, 500),
                extra={"job": delivery.correlation_id or None},
            )  # fmt: skip
            await self._dead_letter(delivery, reason, "bad_signal")
            self._transport.ack(delivery)
            return
        self._transport.ack(delivery)
        await asyncio.shield(sending)

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
        queue = partition_queue(self._settings.queue, partition)
        log.debug("%s handed over to %s", kind, queue)
        await self._outbox.publish([handoff.handed_over(delivery, queue, kind, job_id)])
        self._transport.ack(delivery)

    async def _answer_finished(self, event: JobSubmitted) -> bool:
        """A trigger for a job that ended and left memory: answer from the journal, once more."""
        row = await self._requests.finished_row(event.job_id)
        if row is None:
            return False
        log.info("duplicate trigger for finished job=%s", row.id, extra={"job": row.id})
        if event.reply_to:
            batch, notice = finished_notice(row, event.reply_to, event.at)
            await self._journal.append(batch)
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
        await self._outbox.dead_letter(delivery, dead_letter_queue(self._settings.queue), reason)
        for watcher in self._watchers:
            watcher.dead_lettered(kind)
