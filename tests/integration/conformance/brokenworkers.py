"""Echo workers with one deliberate protocol bug each, for showing that the kit's rules can fail.

    BROKEN=ack-first QUEUE=q python tests/integration/conformance/brokenworkers.py

BROKEN picks the bug: `ack-first` (acks the request, then replies), `fixed-queue` (replies to a
queue of its own instead of reply_to), `no-correlation` (replies without correlation_id),
`requeue-failures` (answers a failing input with nack requeue=true, forever),
`reply-and-requeue` (replies x-error to a failing input, then requeues it too), `ignore-refs`
(knows nothing of payload references: a reference in a request reaches its handler as the
reference object, and is echoed as such). Otherwise each is an echo worker as the conformance
kit's --echo expects (aio-pika alone, no project code), none of them resolving references.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage
from aio_pika.exceptions import DeliveryError

BUGS = (
    "ack-first",
    "fixed-queue",
    "no-correlation",
    "requeue-failures",
    "reply-and-requeue",
    "ignore-refs",  # no code of its own: not resolving references is every one's behaviour here
)


def _echo(body: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """(output, extra headers): the input, or an x-error when it asks to fail."""
    data = json.loads(body)
    if data.get("fail") is True:
        return {"error": {"message": "asked to fail"}}, {"x-error": "asked to fail"}
    return data, {}


async def _handle(bug: str, channel: AbstractChannel, message: AbstractIncomingMessage) -> None:
    output, headers = _echo(message.body)
    if headers and bug == "requeue-failures":
        await message.nack(requeue=True)
        return
    if "x-attempt" in (message.headers or {}):
        headers["x-attempt"] = message.headers["x-attempt"]
    reply = aio_pika.Message(
        json.dumps(output).encode(),
        content_type="application/json",
        correlation_id=None if bug == "no-correlation" else message.correlation_id,
        headers=headers,
    )
    routing_key = f"{os.environ['QUEUE']}.replies" if bug == "fixed-queue" else message.reply_to
    if bug == "ack-first":
        await message.ack()
    try:
        await channel.default_exchange.publish(reply, routing_key=routing_key or "")
    except DeliveryError:  # the broker refused the reply: let the request come again
        if bug != "ack-first":
            await message.nack(requeue=True)
        return
    if bug == "reply-and-requeue" and "x-error" in headers:
        await message.nack(requeue=True)
    elif bug != "ack-first":
        await message.ack()


async def main(bug: str) -> None:
    """Serve $QUEUE with the bug until SIGTERM."""
    queue_name = os.environ["QUEUE"]
    url = os.environ.get("AMQP_URL", "amqp://guest:guest@localhost:5672/")
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()  # publisher confirms on: the reply is confirmed
        await channel.set_qos(prefetch_count=10)
        if bug == "fixed-queue":
            await channel.declare_queue(f"{queue_name}.replies", exclusive=True)
        queue = await channel.declare_queue(queue_name, durable=True)

        async def on_message(message: AbstractIncomingMessage) -> None:
            await _handle(bug, channel, message)

        await queue.consume(on_message)
        print(f"listening on {queue_name} ({bug})", flush=True)
        await stop.wait()


if __name__ == "__main__":
    kind = os.environ.get("BROKEN", "")
    if kind not in BUGS:
        sys.exit(f"BROKEN must be one of {', '.join(BUGS)}, got {kind!r}")
    asyncio.run(main(kind))
