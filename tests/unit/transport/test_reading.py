"""Deliveries assembled where the connection hands over their frames (`transport.reading`)."""

from __future__ import annotations

import asyncio
from typing import Any

from pamqp import commands as spec
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

from workflow_manager.transport.reading import DeliveryTap, tap


class _Channel:
    """What the tap uses of an aiormq channel: its frame queue, consumers and task store."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[Any] = asyncio.Queue()
        self.started: list[Any] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.consumers = {"ctag": self._consume}

    async def _consume(self, message: Any) -> None:
        self.started.append(message)

    def create_task(self, coroutine: Any) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.append(task)
        return task

    @staticmethod
    def _on_consumer_done(task: asyncio.Task[None]) -> None:
        task.result()


def _deliver(tag: int, consumer: str = "ctag") -> spec.Basic.Deliver:
    return spec.Basic.Deliver(consumer_tag=consumer, delivery_tag=tag, routing_key="q")


def _header(size: int) -> ContentHeader:
    return ContentHeader(0, size, spec.Basic.Properties(correlation_id="job:step"))


async def _put(channel: _Channel, *frames: Any) -> list[Any]:
    """Hand `frames` to the channel as the connection does; what reached the channel's reader."""
    for frame in frames:
        await channel.frames.put((1, frame))
    await asyncio.gather(*channel.tasks)  # the consumers started, done
    passed = []
    while not channel.frames._queue.empty():  # type: ignore[attr-defined]
        passed.append((await channel.frames.get())[1])
        channel.frames.task_done()
    return passed


async def test_a_delivery_over_several_body_frames_starts_its_consumer_once_whole() -> None:
    channel = _Channel()
    tap(channel)
    frames = (_deliver(7), _header(11), ContentBody(b"hello "), ContentBody(b"world"))
    assert await _put(channel, *frames) == []
    [message] = channel.started
    assert message.body == b"hello world" and message.delivery.delivery_tag == 7
    assert message.header.properties.correlation_id == "job:step" and message.channel is channel


async def test_an_empty_body_completes_at_its_header_and_the_next_delivery_follows() -> None:
    channel = _Channel()
    tap(channel)
    frames = (_deliver(1), _header(0), _deliver(2), _header(2), ContentBody(b"{}"))
    assert await _put(channel, *frames) == []
    assert [(m.delivery.delivery_tag, m.body) for m in channel.started] == [(1, b""), (2, b"{}")]


async def test_other_frames_and_a_returned_messages_content_go_on_to_the_channel_in_order() -> None:
    channel = _Channel()
    tap(channel)
    returned = spec.Basic.Return(reply_code=312, reply_text="NO_ROUTE", routing_key="gone")
    ack, header, body = spec.Basic.Ack(delivery_tag=3), _header(2), ContentBody(b"{}")
    passed = await _put(channel, ack, returned, header, body, _deliver(4), _header(0))
    assert passed == [ack, returned, header, body]
    assert [m.delivery.delivery_tag for m in channel.started] == [4]


async def test_a_delivery_for_a_cancelled_consumer_starts_nothing() -> None:
    channel = _Channel()
    tap(channel)
    assert await _put(channel, _deliver(5, consumer="cancelled"), _header(0)) == []
    assert channel.started == []


async def test_a_channel_is_tapped_once_and_its_reader_still_gets_what_is_not_a_delivery() -> None:
    channel = _Channel()
    tap(channel)
    first = channel.frames
    tap(channel)
    assert channel.frames is first and isinstance(first, DeliveryTap)
    waiting = asyncio.ensure_future(channel.frames.get())  # the reader, waiting already
    consume_ok = spec.Basic.ConsumeOk(consumer_tag="ctag")
    await channel.frames.put((1, consume_ok))
    assert (await asyncio.wait_for(waiting, 1))[1] is consume_ok
