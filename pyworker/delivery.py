"""One request, start to finish: the one place where "returned or raised" becomes reply + ack.

The order is fixed: run the handler, publish the reply with publisher confirms, and only when
the broker has accepted the reply, ack the request. If the reply cannot be published the request
is not acked, so RabbitMQ delivers it again. A request whose connection was lost while it ran
is not answered at all (RabbitMQ redelivers it): `handle_delivery` returns False and the worker
counts it in its Outage, so nothing is logged per request for a lost connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage
from aio_pika.exceptions import AMQPError, ChannelInvalidStateError, DeliveryError, PublishError
from pydantic import ValidationError

from amqp_outage import is_disconnect
from pyworker.context import StepContext
from pyworker.errors import ProtocolError, StepError
from pyworker.handlers import StepHandler
from pyworker.payloadrefs import NO_PAYLOADS, Payloads
from pyworker.protocol import (
    CONTENT_TYPE,
    HEADER_ERROR,
    Reply,
    decode_request,
    error_reply,
    result_reply,
)
from pyworker.tracing import HandlerSpans

__all__ = ["handle_delivery", "REFUSED_REPLY_DELAY_S"]

log = logging.getLogger(__name__)

DEFAULT_SPANS = HandlerSpans()  # on the global TracerProvider, when OpenTelemetry is installed

# Wait this long before requeueing a request whose reply the broker refused (e.g. a full reply
# queue), so a persistent refusal does not become a hot redelivery loop.
REFUSED_REPLY_DELAY_S = 1.0


def context_of(message: AbstractIncomingMessage, queue: str) -> StepContext:
    """The StepContext for a delivered request."""
    return StepContext.from_properties(
        queue=queue,
        correlation_id=message.correlation_id,
        headers=message.headers,
        message_id=message.message_id,
        redelivered=bool(message.redelivered),
    )


async def _outcome(
    handler: StepHandler,
    body: bytes,
    ctx: StepContext,
    executor: Executor,
    spans: HandlerSpans,
    payloads: Payloads,
) -> Reply:
    """The reply for this request: the handler's result, or an x-error for whatever was raised.

    References in the request are resolved before the handler runs, and a large result's values
    stored after it: a reference that cannot be resolved, or a value that cannot be stored, is an
    x-error like any failure of the step."""
    started_s = time.monotonic()
    try:
        with spans.span(ctx):  # a failure is recorded on the span, then answered below
            data = await payloads.resolve_request(decode_request(body), ctx.headers)
            result = await handler.invoke(data, ctx, executor)
            reply = result_reply(result, ctx.attempt, ctx.meta_patch)
            reply = await payloads.store_reply(reply, result or {}, ctx)
    except Exception as exc:  # every failure of a step is reported to the manager, never raised
        reply = error_reply(exc, ctx.attempt)
        expected = isinstance(exc, ProtocolError | StepError | ValidationError)
        log.warning(
            "%s failed: %s",
            ctx.log_fields,
            reply.headers[HEADER_ERROR],
            exc_info=None if expected else exc,
        )
        return reply
    log.info("%s done in %.3fs", ctx.log_fields, time.monotonic() - started_s)
    return reply


async def _publish(channel: AbstractChannel, reply: Reply, reply_to: str, ctx: StepContext) -> None:
    message = aio_pika.Message(
        body=reply.body,
        content_type=CONTENT_TYPE,
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        correlation_id=ctx.correlation_id,
        headers=reply.headers,
    )
    await channel.default_exchange.publish(message, routing_key=reply_to, mandatory=True)


def _channel_closed(message: AbstractIncomingMessage) -> bool:
    """Whether the channel the request came on is closed (aio-pika raises on reading it)."""
    try:
        return bool(message.channel.is_closed)
    except ChannelInvalidStateError:
        return True


async def _settle(message: AbstractIncomingMessage, ctx: StepContext, *, ack: bool) -> bool:
    """Ack (or requeue) the request; False if the connection was lost first."""
    try:
        await (message.ack() if ack else message.nack(requeue=True))
    except (AMQPError, ConnectionError, RuntimeError) as exc:
        # The channel is gone; RabbitMQ requeues every unacked request of a closed channel.
        if is_disconnect(exc):
            log.debug("%s not settled (%s); it will be redelivered", ctx.log_fields, exc)
            return False
        log.warning(
            "%s could not settle the request (%s); it will be redelivered", ctx.log_fields, exc
        )
    return True


async def handle_delivery(
    message: AbstractIncomingMessage,
    handler: StepHandler,
    channel: AbstractChannel,
    executor: Executor,
    spans: HandlerSpans = DEFAULT_SPANS,
    payloads: Payloads = NO_PAYLOADS,
) -> bool:
    """Run `handler` on one request, publish its reply (or x-error) to `reply_to`, then ack.

    With OpenTelemetry, the handler runs in a span from `spans` that continues the job's trace.
    `payloads` resolves the request's references and stores a large reply's values.

    Returns False when the request was left unanswered or unsettled because the connection was
    lost (RabbitMQ redelivers it once the worker is back); True otherwise.
    """
    ctx = context_of(message, handler.queue)
    if not message.reply_to:
        log.warning("%s request has no reply_to; nothing to answer, acking it", ctx.log_fields)
        return await _settle(message, ctx, ack=True)
    again = " (redelivered)" if ctx.redelivered else ""
    log.debug("%s received on %r%s", ctx.log_fields, handler.queue, again)
    reply = await _outcome(handler, message.body, ctx, executor, spans, payloads)
    if _channel_closed(message):
        # Lost with its connection: RabbitMQ redelivers it, so a reply now would be a duplicate.
        log.debug("%s its channel closed while it ran; not replying", ctx.log_fields)
        return False
    try:
        await _publish(channel, reply, message.reply_to, ctx)
    except PublishError as exc:
        # Unroutable: the reply queue does not exist, so no retry could ever deliver this reply.
        log.error(
            "%s reply queue %r does not exist (%s); dropping the reply and acking",
            ctx.log_fields,
            message.reply_to,
            exc,
        )
    except DeliveryError as exc:
        log.warning(
            "%s broker refused the reply to %r (%s); requeueing the request in %.1fs",
            ctx.log_fields,
            message.reply_to,
            exc,
            REFUSED_REPLY_DELAY_S,
        )
        await asyncio.sleep(REFUSED_REPLY_DELAY_S)
        return await _settle(message, ctx, ack=False)
    except (TimeoutError, AMQPError, ConnectionError, ChannelInvalidStateError) as exc:
        if is_disconnect(exc):
            log.debug("%s reply not sent (%s); it will be redelivered", ctx.log_fields, exc)
            return False
        log.warning("%s reply not sent (%s); the request will be redelivered", ctx.log_fields, exc)
        return True
    return await _settle(message, ctx, ack=True)
