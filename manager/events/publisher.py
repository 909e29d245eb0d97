"""Run events on the broker: a durable topic exchange `<queue>.events`, for systems that react.

Routing key `<workflow>.<type>` (e.g. `book-word-counts.job.completed`), body the event's JSON,
header `x-event` its type, message id its event id. Level `jobs` publishes the job.* events
of top-level jobs (so the broker's load per step does not grow); `steps` adds the step.*
events and the job.* events of child jobs (those carry `parent`).

Publishing is confirmed but best effort: events wait in a bounded backlog (the oldest are
kept, the newest dropped and counted when it is full, e.g. in a long outage), and the events
still waiting when the manager stops are lost. The journal and the API stay the truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque

from manager.errors import BrokerError
from manager.events.model import RunEvent
from manager.transport import (
    HEADER_EVENT,
    Outbound,
    Transport,
    event_routing_key,
    events_exchange,
)

__all__ = ["EVENT_LEVELS", "EventPublisher"]

log = logging.getLogger(__name__)

EVENT_LEVELS = ("jobs", "steps", "off")
_HELD = "run events held back, then published"


class EventPublisher:
    """A hub sink that publishes run events to the events exchange, with confirms."""

    def __init__(
        self,
        transport: Transport,
        queue: str,
        level: str = "jobs",
        backlog_limit: int = 10_000,
        lanes: int = 16,
        retry_s: float = 1.0,
    ) -> None:
        if level not in ("jobs", "steps"):
            raise ValueError(f"event level must be 'jobs' or 'steps', got {level!r}")
        self.exchange = events_exchange(queue)
        self.level = level
        self.dropped = 0
        self._steps = level == "steps"
        self._transport = transport
        self._limit = backlog_limit
        self._retry_s = retry_s
        self._backlog: deque[RunEvent] = deque()
        self._wake = asyncio.Event()
        self._lanes = asyncio.Semaphore(lanes)
        self._sending: set[asyncio.Task[None]] = set()
        self._runner: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<EventPublisher {self.exchange} {self.level} backlog={len(self._backlog)}>"

    def __call__(self, event: RunEvent) -> None:
        """Take an event from the hub (quick: it only queues it)."""
        if not self._steps and (event.parent is not None or not event.is_job_event):
            return
        if len(self._backlog) >= self._limit:
            if self.dropped == 0:
                log.warning(
                    "run events: %d waiting to be published to '%s'; dropping the newest",
                    self._limit, self.exchange,
                )  # fmt: skip
            self.dropped += 1
            return
        self._backlog.append(event)
        self._wake.set()

    async def start(self) -> None:
        """Declare the exchange (the transport is connected) and start publishing."""
        await self._transport.declare_exchange(self.exchange)
        self._runner = asyncio.create_task(self._run(), name="event-publisher")
        log.info("publishing %s events to exchange '%s'", self.level, self.exchange)

    async def drain(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until every event queued so far is confirmed."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while self._backlog or self._sending:
                    if self._sending:
                        await asyncio.wait(set(self._sending))
                    else:
                        await asyncio.sleep(0)  # the runner takes the next ones

    async def stop(self) -> None:
        """Stop publishing; events not confirmed yet are given up."""
        tasks = [t for t in (self._runner, *self._sending) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.dropped:
            log.warning("run events: %d were dropped (backlog full)", self.dropped)

    async def _run(self) -> None:
        while True:
            while not self._backlog:
                self._wake.clear()
                await self._wake.wait()
            event = self._backlog.popleft()
            await self._lanes.acquire()
            # Tasks start in order, so their frames reach the broker in the events' order.
            task = asyncio.create_task(self._send(self._message(event)))
            self._sending.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        self._lanes.release()

    def _message(self, event: RunEvent) -> Outbound:
        return Outbound(
            event_routing_key(event.workflow, event.type),
            json.dumps(event.to_json(), separators=(",", ":")).encode(),
            headers={HEADER_EVENT: event.type},
            message_id=event.id,
            exchange=self.exchange,
            correlation_id=event.job,
        )

    async def _send(self, message: Outbound) -> None:
        """Publish until confirmed: after a broker error, once connected again."""
        held = False
        while True:
            try:
                await self._transport.publish(message)
                return
            except BrokerError as exc:
                if not held:
                    held = True
                    self._transport.held(_HELD)  # counted in the line that ends the outage
                    log.debug("run event held back until the broker is back: %s", exc)
                if self._transport.connected:
                    await asyncio.sleep(self._retry_s)
                else:
                    await self._transport.wait_connected()
