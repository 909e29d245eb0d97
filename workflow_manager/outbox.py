"""Publishing: outbound messages until the broker confirms them, then marked sent in the journal.

One retry policy for everything the manager publishes (step requests, outcome notices, dead
letters): a broker error means the connection is down or going down, so the message waits for
the transport to be connected again (an event, not a poll) and goes out then, counted once in
the outage's summary rather than logged. Nothing is dropped but a notice no queue can take.
Any other failure is one message's alone: logged, left unconfirmed, and the others go on.
"""

from __future__ import annotations

import asyncio
import functools
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


class _Waiting:
    """The messages of one `Outbox.start` not yet settled, and the future that says when."""

    __slots__ = ("_done", "_left", "_failure")

    def __init__(self, done: asyncio.Future[None], count: int) -> None:
        self._done = done
        self._left = count
        self._failure: BaseException | None = None

    def settled(self, outcome: asyncio.Future[None] | None) -> None:
        """One message settled; `outcome`: the task of its slow way, if it took one."""
        if outcome is not None and self._failure is None:
            if outcome.cancelled():
                self._failure = BrokerError("publishing was cancelled")
            elif outcome.exception() is not None:
                self._failure = outcome.exception()
        self._left -= 1
        if self._left == 0 and not self._done.done():
            if self._failure is None:
                self._done.set_result(None)
            else:
                self._done.set_exception(self._failure)


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
        """Publish messages; each journaled one is marked sent once confirmed."""
        await self.start(list(messages))

    def start(self, messages: list[Outbound]) -> asyncio.Future[None]:
        """Start publishing `messages`, with no task of its own on the way that goes right:
        each is handed to the transport now and settled by its confirm's callback, and only
        one that fails goes the slow way (`_publish_again`, in a task).

        The future resolves once every message is confirmed (or given up: a notice no queue
        takes, one that cannot be published), and fails with BrokerError when the transport
        closed before one went out (it stays unconfirmed in the journal).
        """
        loop = asyncio.get_running_loop()
        if len(messages) > _LANES:
            return loop.create_task(self._in_lanes(messages))
        done: asyncio.Future[None] = loop.create_future()
        if not messages:
            done.set_result(None)
            return done
        waiting = _Waiting(done, len(messages))
        for message in messages:
            self._begin(message)
            sent = self._transport.send(message)
            sent.add_done_callback(functools.partial(self._settle, message, waiting))
        return done

    async def _in_lanes(self, messages: list[Outbound]) -> None:
        """A wide fan-out (or a recovery's backlog) in parallel lanes: all at once would hold
        every request in flight, each pending confirm costing kilobytes, and more lanes than
        this do not publish any faster."""
        queued = iter(messages)

        async def lane() -> None:
            for message in queued:
                await self.start([message])

        await asyncio.gather(*(lane() for _ in range(_LANES)))

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

    def _begin(self, message: Outbound) -> None:
        """Count `message` in flight until `_end`."""
        self._in_flight += 1
        if message.message_id is not None:
            self._sending.add(message.message_id)
            if self._track_replies and message.reply_to is not None:
                self._by_reply[message.reply_to] += 1

    def _end(self, message: Outbound, confirmed: bool) -> None:
        """`message` is no longer in flight; a confirmed journaled one is marked sent."""
        self._in_flight -= 1
        message_id = message.message_id
        if message_id is None:
            return
        self._sending.discard(message_id)
        if self._track_replies and message.reply_to is not None:
            self._sent_for(message.reply_to)
        if confirmed:
            if not self._confirmed:
                # One journal batch for every confirm of this loop tick, not one each.
                asyncio.get_running_loop().call_soon(self.flush)
            self._confirmed.append((message_id, self._clock()))

    def _settle(self, message: Outbound, waiting: _Waiting, sent: asyncio.Future[None]) -> None:
        """A publish's first try ended: confirmed, or on to the slow way."""
        if not sent.cancelled() and sent.exception() is None:
            self._end(message, confirmed=True)
            waiting.settled(None)
            return
        again = asyncio.get_running_loop().create_task(self._publish_again(message, sent))
        again.add_done_callback(waiting.settled)

    async def _publish_again(self, message: Outbound, first: asyncio.Future[None]) -> None:
        """The slow way, after a first try that failed: one retry policy for everything."""
        confirmed = False
        try:
            failure = first.exception() if not first.cancelled() else BrokerError("cancelled")
            if isinstance(failure, Unroutable):
                returned = failure
                await self._until_sent(lambda: self._unroutable(message, returned))
            elif isinstance(failure, BrokerError):
                await self._until_sent(lambda: self._send(message), failed=failure)
            elif failure is not None:
                raise failure
            confirmed = True
        except (BrokerError, asyncio.CancelledError):
            raise
        except Exception as exc:
            # One message that cannot be published (a bug, a value the client cannot encode)
            # must not hold up the others: it stays unconfirmed in the journal, to be
            # published again at the next start or reconnect, and is reported each time.
            log.error(
                "cannot publish message id=%s to '%s': %r", message.message_id, message.queue,
                exc, exc_info=exc,
                extra={"job": (message.correlation_id or "").split(":")[0] or None},
            )  # fmt: skip
        finally:
            self._end(message, confirmed)

    async def _send(self, message: Outbound) -> None:
        """Publish once; an unroutable step request gets its queue back and goes again."""
        try:
            await self._transport.publish(message)
        except Unroutable as exc:
            await self._unroutable(message, exc)

    async def _unroutable(self, message: Outbound, exc: Unroutable) -> None:
        """No queue took `message`: a step queue deleted under us is declared again and the
        request goes again; a notice to a reply queue that is gone is dropped."""
        if not message.step_request:
            # A notice to a reply queue that is gone: nobody can receive it, ever.
            log.warning("dropped a message for '%s': %s", message.queue, exc)
            return
        # A step queue deleted under us: declare it again so the request waits there.
        log.warning("step queue '%s' vanished; declaring it again", message.queue)
        await self._transport.declare([message.queue])
        await self._transport.publish(message)

    async def _until_sent(
        self, send: Callable[[], Awaitable[None]], failed: BrokerError | None = None
    ) -> None:
        """Call `send` until it succeeds: after a broker error (`failed`: one before the first
        call), once connected again.

        BrokerError once the transport is closed (the manager stopping): a journaled message
        stays unconfirmed there, and is published again by whoever runs its job next.
        """
        held = False
        while True:
            if failed is not None:
                if not held:
                    held = True
                    self._transport.held(_HELD)
                    log.debug("publish held back until the broker is back: %s", failed)
                if self._transport.connected:
                    # Failed before the loss was noticed (or a channel hiccup): soon again.
                    await asyncio.sleep(self._retry_s)
                else:
                    await self._transport.wait_connected()
            try:
                await send()
                return
            except BrokerError as exc:
                failed = exc

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
