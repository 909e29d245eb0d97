"""The event hub: an `Observer` that numbers run events, keeps the latest, and hands them out.

Ids are `<epoch>-<seq>`: `epoch` is when this manager process started (milliseconds), `seq`
counts up from 1. The hub keeps the last `capacity` events in a ring, so a client that
reconnects with `Last-Event-ID` gets every event it missed, or, when the ring no longer reaches
back that far (or another manager process sent it: a restart, another manager of a cluster),
an explicit reset: never a silent gap.

`heartbeat_s`: how often an idle stream sends a comment, so proxies keep it open.
Every subscriber has a bounded queue: one that falls `queue_limit` events behind is marked
overflowed, its queue dropped, and the stream tells it so and ends (it may resume by id).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from workflow_manager.engine import Command, Job, JobsReleased
from workflow_manager.events.model import RunEvent, run_events

__all__ = ["EventFilter", "EventHub", "Subscription", "Resume", "parse_event_id"]

_ID = re.compile(r"(\d{1,20})-(\d{1,20})")
Sink = Callable[[RunEvent], None]


def parse_event_id(text: str) -> tuple[int, int] | None:
    """An event id `<epoch>-<seq>` as (epoch, seq), or None when it has another shape."""
    match = _ID.fullmatch(text.strip())
    return (int(match[1]), int(match[2])) if match else None


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events a subscriber wants: one job and its children, and/or one workflow."""

    job: str | None = None
    workflow: str | None = None

    def matches(self, event: RunEvent) -> bool:
        """True when `event` passes every condition set."""
        if self.job is not None and event.job != self.job and event.root != self.job:
            return False
        return self.workflow is None or event.workflow == self.workflow


class Subscription:
    """One client's bounded queue of events; `overflowed` once it fell too far behind."""

    def __init__(self, hub: EventHub, wanted: EventFilter, limit: int) -> None:
        self._hub = hub
        self.wanted = wanted
        self.limit = limit
        self.overflowed = False
        self.closed = False
        self._queue: deque[RunEvent] = deque()
        self._wake = asyncio.Event()

    def __repr__(self) -> str:
        return f"<Subscription {self.wanted} {len(self._queue)} queued>"

    @property
    def queued(self) -> int:
        """How many events wait to be sent."""
        return len(self._queue)

    def push(self, event: RunEvent) -> None:
        """Queue an event, or mark the subscriber overflowed (dropping its queue) when full."""
        if self.overflowed:
            return
        if len(self._queue) >= self.limit:
            self.overflowed = True
            self._queue.clear()  # the memory goes now, not when the client reads again
        else:
            self._queue.append(event)
        self._wake.set()

    async def next_batch(self, timeout_s: float) -> list[RunEvent]:
        """The queued events (waiting up to `timeout_s` for one); [] on timeout, overflow or end."""
        if not self._queue and not self.overflowed and not self.closed:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout_s)
            except TimeoutError:
                return []
        batch = list(self._queue)
        self._queue.clear()
        return batch

    def end(self) -> None:
        """The stream ends (the manager is stopping, or its job was handed over to another):
        the client reconnects, to the manager running it."""
        self.closed = True
        self._wake.set()

    def close(self) -> None:
        """Stop receiving events."""
        self._hub.unsubscribe(self)


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a new subscription starts: the events it missed, or a reset (with the latest id)."""

    backlog: list[RunEvent]
    reset: str | None  # why the client must re-read state; None when nothing was missed
    latest_id: str


class EventHub:
    """Observer of the pipeline: turns commands into numbered `RunEvent`s for streams and sinks."""

    def __init__(
        self,
        capacity: int = 10_000,
        queue_limit: int = 1_000,
        heartbeat_s: float = 15.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if capacity < 1 or queue_limit < 1 or heartbeat_s <= 0:
            raise ValueError("capacity and queue_limit must be at least 1, heartbeat_s above 0")
        self.epoch = int(clock() * 1000)
        self.queue_limit = queue_limit
        self.heartbeat_s = heartbeat_s
        self._clock = clock
        self._ring: deque[RunEvent] = deque(maxlen=capacity)
        self._seq = itertools.count(1)
        self._last = 0
        self._subscribers: list[Subscription] = []
        self._sinks: list[Sink] = []
        self._closed = False

    def __repr__(self) -> str:
        return f"<EventHub last={self.event_id(self._last)} subscribers={len(self._subscribers)}>"

    def event_id(self, seq: int) -> str:
        """The SSE id of event number `seq` of this process."""
        return f"{self.epoch}-{seq}"

    @property
    def latest_id(self) -> str:
        """The id of the last event (`<epoch>-0` before the first)."""
        return self.event_id(self._last)

    def add_sink(self, sink: Sink) -> None:
        """Call `sink(event)` for every event (e.g. the broker publisher); it must be quick."""
        self._sinks.append(sink)

    def remove_sink(self, sink: Sink) -> None:
        """Stop calling `sink` (a publisher whose broker connection is closing)."""
        if sink in self._sinks:
            self._sinks.remove(sink)

    def _end_released(self, commands: Sequence[Command]) -> None:
        """End the streams following a job handed over: the manager that runs it now has its
        events, and the client, reconnecting, is routed there."""
        for command in commands:
            if isinstance(command, JobsReleased):
                released = set(command.jobs)
                for subscriber in self._subscribers:
                    if subscriber.wanted.job in released:
                        subscriber.end()

    # -- Observer --------------------------------------------------------------------------

    def recovered(self, jobs: Iterable[Job]) -> None:
        """Nothing to tell: events start with this process (clients resuming across it reset)."""

    def observe(self, commands: Sequence[Command]) -> None:
        """Number the run events of one committed event and hand them out; end the streams
        following jobs handed over to another manager."""
        events = run_events(commands, self._clock())
        if not events:  # a hand-over's commands make no run event
            self._end_released(commands)
        for event in events:
            event.seq = self._last = next(self._seq)
            event.id = f"{self.epoch}-{event.seq}"
            self._ring.append(event)
            for sink in self._sinks:
                sink(event)
            for subscriber in self._subscribers:
                if subscriber.wanted.matches(event):
                    subscriber.push(event)

    # -- subscribers -----------------------------------------------------------------------

    def subscribe(
        self, wanted: EventFilter, after: str | None = None
    ) -> tuple[Subscription, Resume]:
        """A subscription from now on, and what it missed since event id `after` (if given).

        ValueError when `after` is not an event id (see `parse_event_id`). Done with no await,
        so no event falls between the backlog and the live queue.
        """
        resume = self._resume(wanted, after)
        subscription = Subscription(self, wanted, self.queue_limit)
        self._subscribers.append(subscription)
        if self._closed:
            subscription.end()  # opened while the manager stops: ends at once
        return subscription, resume

    def unsubscribe(self, subscription: Subscription) -> None:
        """Forget a subscription (no error if it is gone already)."""
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    def close(self) -> None:
        """End every open stream, and those opened from now on (the manager is stopping, and
        the HTTP server waits for open responses)."""
        self._closed = True
        for subscription in list(self._subscribers):
            subscription.end()

    @property
    def subscribers(self) -> int:
        """How many subscriptions are open."""
        return len(self._subscribers)

    def _resume(self, wanted: EventFilter, after: str | None) -> Resume:
        latest = self.latest_id
        if after is None:
            return Resume([], None, latest)
        parsed = parse_event_id(after)
        if parsed is None:
            raise ValueError(f"not an event id: {after!r}")
        epoch, seq = parsed
        if epoch != self.epoch:
            # Another manager process sent it: this one before a restart, or another manager
            # of the cluster the client reached before (each numbers its own events).
            why = "that event came from another manager process (restarted, or another manager)"
            return Resume([], why, latest)
        if seq > self._last:
            return Resume([], f"no event {after} was sent yet (latest: {latest})", latest)
        first = self._ring[0].seq if self._ring else self._last + 1
        if seq < first - 1:
            return Resume([], f"events after {after} are no longer kept", latest)
        missed = itertools.islice(self._ring, seq - first + 1, None)
        return Resume([e for e in missed if wanted.matches(e)], None, latest)
