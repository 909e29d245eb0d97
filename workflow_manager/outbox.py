"""Publishing: outbound messages until the broker confirms them, then marked sent in the journal.

One retry policy for everything the manager publishes (step requests, outcome notices, dead
letters): a broker error means the connection is down or going down, so the message waits for
the transport to be connected again (an event, not a poll) and goes out then, counted once in
the outage's summary rather than logged. Nothing is dropped but a notice no queue can take.
Any other failure is one message's alone: logged, left unconfirmed, and the others go on.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable

from workflow_manager.errors import BrokerError, Unroutable
from workflow_manager.journal import Batch, Journal
from workflow_manager.textline import one_line
from workflow_manager.transport import Delivery, Outbound, Transport

__all__ = ["Outbox"]

log = logging.getLogger(__name__)

_LANES = 512
_HELD = "publishes held back, then sent"


class Outbox:
    """Publishes outbound messages with confirms and records each confirm in the journal."""

    def __init__(
        self,
        transport: Transport,
        journal: Journal,
        clock: Callable[[], float],
        on_fatal: Callable[[BaseException], None],
        retry_s: float = 1.0,
        *,
        by_reply_queue: bool = False,
    ) -> None:
        self._transport = transport
        self._journal = journal
        self._clock = clock
        self._on_fatal = on_fatal
        self._retry_s = retry_s
        self._confirmed: list[tuple[str, float]] = []
        self._sending: set[str] = set()  # message ids being published now
        self._in_flight = 0
        # Partitioned only (`by_reply_queue`): journaled messages in flight by the queue their
        # replies come back on (a partition's), and whoever waits for one to have none.
        self._track_replies = by_reply_queue
        self._by_reply: Counter[str] = Counter()
        self._quiet: list[tuple[set[str], asyncio.Future[None]]] = []

    @property
    def pending(self) -> int:
        """Publishes in flight: sent and not yet confirmed, or waiting for the broker."""
        return self._in_flight

    async def publish(self, messages: Iterable[Outbound]) -> None:
        """Publish messages in parallel lanes; each journaled one is marked sent once confirmed."""
        messages = list(messages)
        if len(messages) == 1:
            await self._publish_one(messages[0])
            return
        # A wide fan-out would otherwise hold all its requests in flight at once: each pending
        # confirm costs kilobytes, and more lanes than this do not publish any faster.
        queued = iter(messages)

        async def lane() -> None:
            for message in queued:
                await self._publish_one(message)

        await asyncio.gather(*(lane() for _ in range(min(_LANES, len(messages)))))

    async def quiet(self, reply_queues: set[str]) -> None:
        """Wait until no journaled message whose replies go to `reply_queues` is in flight."""
        if not any(self._by_reply[queue] for queue in reply_queues):
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._quiet.append((reply_queues, waiter))
        try:
            await waiter
        finally:
            self._quiet = [(q, w) for q, w in self._quiet if w is not waiter]

    async def publish_pending(self, messages: Iterable[Outbound]) -> int:
        """Publish journaled messages not confirmed yet, but those being published already.

        Returns how many it publishes.
        """
        missing = [m for m in messages if m.message_id not in self._sending]
        await self.publish(missing)
        return len(missing)

    async def dead_letter(self, delivery: Delivery, queue: str, reason: str) -> None:
        """Keep a message that cannot be processed in `queue`, with the reason."""

        async def send() -> None:
            try:
                await self._transport.dead_letter(delivery, queue, reason)
            except Unroutable:
                await self._transport.declare([queue])  # deleted under us: make it again
                await self._transport.dead_letter(delivery, queue, reason)

        self._in_flight += 1
        try:
            await self._until_sent(send)
        finally:
            self._in_flight -= 1
        # A reason may quote what the sender wrote: one line, cut, in the log.
        log.warning("dead-lettered a message from '%s': %s", delivery.queue, one_line(reason, 500))

    def flush(self) -> None:
        """Journal the sent marks not yet written (at shutdown, before the journal closes)."""
        if not self._confirmed:
            return
        confirmed, self._confirmed = self._confirmed, []
        # Lazy: a lost mark only means one more publish after a crash, not worth an fsync.
        done = self._journal.append(Batch(sent=confirmed), lazy=True)
        done.add_done_callback(self._check)

    async def _publish_one(self, message: Outbound) -> None:
        message_id = message.message_id
        reply_to = message.reply_to if message_id is not None and self._track_replies else None
        if message_id is not None:
            self._sending.add(message_id)
        if reply_to is not None:
            self._by_reply[reply_to] += 1
        self._in_flight += 1
        try:
            await self._until_sent(lambda: self._send(message))
        except (BrokerError, asyncio.CancelledError):
            raise
        except Exception as exc:
            # One message that cannot be published (a bug, a value the client cannot encode)
            # must not hold up the others: it stays unconfirmed in the journal, to be
            # published again at the next start or reconnect, and is reported each time.
            log.error(
                "cannot publish message id=%s to '%s': %r", message_id, message.queue, exc,
                exc_info=exc, extra={"job": (message.correlation_id or "").split(":")[0] or None},
            )  # fmt: skip
            return
        finally:
            self._in_flight -= 1
            if message_id is not None:
                self._sending.discard(message_id)
            if reply_to is not None:
                self._sent_for(reply_to)
        if message.message_id is not None:
            if not self._confirmed:
                # One journal batch for every confirm of this loop tick, not one each.
                asyncio.get_running_loop().call_soon(self.flush)
            self._confirmed.append((message.message_id, self._clock()))

    async def _send(self, message: Outbound) -> None:
        """Publish once; an unroutable step request gets its queue back and goes again."""
        try:
            await self._transport.publish(message)
        except Unroutable as exc:
            if not message.step_request:
                # A notice to a reply queue that is gone: nobody can receive it, ever.
                log.warning("dropped a message for '%s': %s", message.queue, exc)
                return
            # A step queue deleted under us: declare it again so the request waits there.
            log.warning("step queue '%s' vanished; declaring it again", message.queue)
            await self._transport.declare([message.queue])
            await self._transport.publish(message)

    async def _until_sent(self, send: Callable[[], Awaitable[None]]) -> None:
        """Call `send` until it succeeds: after a broker error, once connected again.

        BrokerError once the transport is closed (the manager stopping): a journaled message
        stays unconfirmed there, and is published again by whoever runs its job next.
        """
        held = False
        while True:
            try:
                await send()
                return
            except BrokerError as exc:
                if not held:
                    held = True
                    self._transport.held(_HELD)
                    log.debug("publish held back until the broker is back: %s", exc)
                if self._transport.connected:
                    # Failed before the loss was noticed (or a channel hiccup): soon again.
                    await asyncio.sleep(self._retry_s)
                else:
                    await self._transport.wait_connected()

    def _sent_for(self, reply_to: str) -> None:
        """One message replied to on `reply_to` is no longer in flight: wake who waits."""
        self._by_reply[reply_to] -= 1
        if self._by_reply[reply_to] == 0:
            del self._by_reply[reply_to]
            for queues, waiter in self._quiet:
                if not waiter.done() and not any(self._by_reply[q] for q in queues):
                    waiter.set_result(None)

    def _check(self, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            self._on_fatal(done.exception())  # type: ignore[arg-type]
