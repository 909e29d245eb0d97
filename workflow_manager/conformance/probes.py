"""The probes: each sends the worker a fixed series of requests and records what came back.

A probe returns an observation (see model.py) for the rules to judge; it never decides PASS or
FAIL itself.
"""

from __future__ import annotations

import asyncio
import uuid

from workflow_manager.conformance.model import (
    AckOrderObservation,
    Batch,
    Exchange,
    FailureObservation,
    RedeliveryObservation,
    SentRequest,
)
from workflow_manager.conformance.requests import UNKNOWN_HEADERS, large_input, unicode_input
from workflow_manager.conformance.session import Session

__all__ = [
    "basic",
    "unknown_headers",
    "unicode",
    "large",
    "concurrency",
    "redelivery",
    "failure",
    "ack_order",
    "exchange_of",
    "failed_exchange",
]

# How long the kit watches for a failed request to come back after its x-error reply: a worker
# that requeues it does so right after replying, so this is plenty, and it is what a passing
# worker costs.
REQUEUE_WATCH_S = 0.5
_RETRY_ATTEMPT = 2  # the basic request claims a retry, so an echoed constant 1 is caught


async def exchange_of(session: Session, label: str, request: SentRequest) -> Exchange:
    """`request` sent with a reply queue `label` of its own, and the reply (or none in time)."""
    queue = await session.reply_queue(label)
    await session.publish(request, queue.name)
    return Exchange(request, await session.collect(queue, 1), session.settings.timeout_s)


async def basic(session: Session) -> Exchange:
    """One request with the --input (as attempt 2 of its step)."""
    return await exchange_of(
        session, "basic", session.request(session.settings.input, attempt=_RETRY_ATTEMPT)
    )


async def unknown_headers(session: Session) -> Exchange:
    """One request carrying headers no worker knows."""
    request = session.request(session.settings.input, extra_headers=UNKNOWN_HEADERS)
    return await exchange_of(session, "unknown-headers", request)


async def unicode(session: Session) -> Exchange:
    """One request with non-ASCII text in a key and a value (sent as UTF-8, not escaped)."""
    return await exchange_of(
        session, "unicode", session.request(unicode_input(session.settings.input))
    )


async def large(session: Session) -> Exchange:
    """One request of over 1 MiB."""
    return await exchange_of(session, "large", session.request(large_input(session.settings.input)))


async def concurrency(session: Session) -> Batch:
    """Many requests at once (each its own job, its input numbered), all replies collected."""
    queue = await session.reply_queue("concurrency")
    count = session.settings.concurrency
    sent = tuple(
        session.request({**session.settings.input, "conformance_index": index})
        for index in range(count)
    )
    await asyncio.gather(*(session.publish(request, queue.name) for request in sent))
    return Batch(sent, await session.collect(queue, count), session.settings.timeout_s)


async def redelivery(session: Session) -> RedeliveryObservation:
    """A request answered once; then the same message again, made `redelivered` by the broker.

    The kit's higher-priority consumer takes the copy before the worker can and requeues it,
    so RabbitMQ delivers it to the worker with the redelivered flag and the same message_id.
    """
    first = await exchange_of(session, "redelivery", session.request(session.settings.input))
    if not first.replies:
        return RedeliveryObservation(first, redelivered=False, again=())
    queue = await session.reply_queue("redelivery-again")
    message_id = first.sent.message_id
    async with session.grab() as grab:
        await session.publish(first.sent, queue.name)
        taken = await grab.take(lambda m: m.message_id == message_id, session.settings.timeout_s)
    again = await session.collect(queue, 1)
    return RedeliveryObservation(first, redelivered=taken is not None, again=again)


async def failure(session: Session) -> FailureObservation:
    """A request with the failing input; then whether it comes back to the worker's queue."""
    request = session.request(session.settings.failing_input or {})
    return await failed_exchange(session, "failure", request)


async def failed_exchange(session: Session, label: str, request: SentRequest) -> FailureObservation:
    """`request`, which the worker should fail; its reply, then whether it comes back.

    After a reply, a marker message published behind it shows that anything requeued before it
    has been seen, and the kit watches REQUEUE_WATCH_S longer for a requeue still on its way.
    Without a reply, it waits for the request itself: a worker that requeues it forever sends it
    round again at once. A request that comes back is acked by the kit, so no loop is left.
    """
    exchange = await exchange_of(session, label, request)
    message_id = exchange.sent.message_id
    marker = f"conformance-marker:{uuid.uuid4()}"
    timeout_s = session.settings.timeout_s
    async with session.grab() as grab:
        if exchange.replies:
            await session.put(session.settings.queue, b"{}", message_id=marker)
            await grab.take(lambda m: m.message_id == marker, timeout_s)
        if not grab.seen(lambda m: m.message_id == message_id):
            # A requeue the worker sends after its reply may still be on its way: watch a while.
            watch_s = min(REQUEUE_WATCH_S, timeout_s) if exchange.replies else timeout_s
            await grab.take(lambda m: m.message_id == message_id, watch_s)
        for message in grab.held:
            if message.message_id in (message_id, marker):
                grab.keep(message)
        requeued = grab.seen(lambda m: m.message_id == message_id)
    return FailureObservation(exchange, requeued=requeued)


async def ack_order(session: Session) -> AckOrderObservation:
    """A request whose reply_to queue is full at first: the broker refuses the reply.

    The reply queue holds at most one message and refuses more (`reject-publish-dlx`: the
    publisher gets basic.nack and the refused copy is dead-lettered to the kit, which is how
    the kit sees the attempt). It starts full with a filler; once a refused reply is seen, the
    kit purges it so the queue accepts again. A worker that waits for the confirm still holds
    the request (or has requeued it) and answers again; one that acked first has lost it.
    """
    refused_queue = await session.reply_queue("refused")
    arguments = {
        "x-max-length": 1,
        "x-overflow": "reject-publish-dlx",
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": refused_queue.name,
    }
    queue = await session.reply_queue("ack-order", arguments)
    await session.put(queue.name, b"{}", message_id="conformance-filler")
    request = session.request(session.settings.input)
    await session.publish(request, queue.name)
    timeout_s = session.settings.timeout_s
    refused = await session.collect(refused_queue, 1)
    if not refused:
        return AckOrderObservation(request, (), (), timeout_s)
    await queue.purge()
    return AckOrderObservation(request, refused, await session.collect(queue, 1), timeout_s)
