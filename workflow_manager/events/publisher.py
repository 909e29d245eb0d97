"""Run events on the broker: a durable topic exchange `<queue>.events`, for systems that react.

Routing key `<workflow>.<type>` (e.g. `book-word-counts.job.completed`), body the event's JSON,
header `x-event` its type, message id its event id. Level `jobs` publishes the job.* events
of top-level jobs (so the broker's load per step does not grow); `steps` adds the step.*
events and the job.* events of child jobs (those carry `parent`).

Publishing is best effort: events go out in order on a channel of their own without publisher
confirms (a confirmed publish costs twice the CPU, on the path of every job); they wait in a
bounded backlog while the broker is away (the oldest are kept, the newest dropped and counted
when it is full, e.g. in a long outage); events still waiting when the manager stops, or written
just before a connection is lost, are lost. The journal and `GET /api/events` (which resumes
with `Last-Event-ID`) stay the truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from workflow_manager.engine import jsontext
from workflow_manager.errors import BrokerError
from workflow_manager.events.model import RunEvent
from workflow_manager.transport import (
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
_BATCH = 1000  # events taken from the backlog for one write at most


class EventPublisher:
    """A hub sink that publishes run events to the events exchange, in order, best effort."""

    def __init__(
        self,
        transport: Transport,
        queue: str,
        level: str = "jobs",
        backlog_limit: int = 10_000,
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
        self._idle = asyncio.Event()
        self._idle.set()
        self._runner: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<EventPublisher {self.exchange} {self.level} backlog={len(self._backlog)}>"

    def __call__(self, event: RunEvent) -> None:
        """Take an event from the hub (quick: it only queues it)."""
        if not self._steps and (event.parent is not None or event.is_step_event):
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
        """Wait (at most `timeout_s`) until every event queued so far is published."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while self._backlog or not self._idle.is_set():
                    await self._idle.wait()
                    await asyncio.sleep(0)  # the runner takes the next ones

    async def stop(self) -> None:
        """Stop publishing; events not published yet are given up."""
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        if self.dropped:
            log.warning("run events: %d were dropped (backlog full)", self.dropped)

    async def _run(self) -> None:
        while True:
            while not self._backlog:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
            self._idle.clear()
            # Those waiting now, in order, as one write (a bulk action's thousands of events
            # would otherwise be a write each); a publish that failed goes again alone.
            count = min(len(self._backlog), _BATCH)
            batch = [self._message(self._backlog.popleft()) for _ in range(count)]
            sent = [self._transport.send_unconfirmed(message) for message in batch]
            outcomes = await asyncio.gather(*sent, return_exceptions=True)
            for message, outcome in zip(batch, outcomes, strict=True):
                if isinstance(outcome, BrokerError):
                    await self._send(message)
                elif isinstance(outcome, BaseException):
                    raise outcome

    def _message(self, event: RunEvent) -> Outbound:
        return Outbound(
            event_routing_key(event.workflow, event.type),
            jsontext.dumps(event.to_json()),
            headers={HEADER_EVENT: event.type},
            message_id=event.id,
            exchange=self.exchange,
            correlation_id=event.job,
        )

    async def _send(self, message: Outbound) -> None:
        """Publish, or after a broker error publish again once connected."""
        held = False
        while True:
            try:
                await self._transport.publish_unconfirmed(message)
                return
            except BrokerError as exc:
                if not held:
                    held = True
                    self._transport.held(_HELD)  # counted in the line that ends the outage
                    log.debug("run event held back until the broker is back: %s", exc)
                connected = self._transport.connected
                if not connected:
                    await self._transport.wait_connected()
                if connected or not self._transport.connected:
                    # Refused while connected, or the transport is closed (the manager is
                    # stopping: its wait returns at once): never retry in a loop that does not
                    # yield, which would hang the event loop until the process is killed.
                    await asyncio.sleep(self._retry_s)
