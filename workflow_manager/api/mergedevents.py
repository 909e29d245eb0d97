"""The cluster's event stream: `GET /api/events` without `job` on a partitioned manager carries
the events of every manager, merged into one Server-Sent Events stream.

The manager asked sends its own events (from its hub) and relays each other live member's
stream (`GET /api/events?scope=local`, asked with `x-wm-forwarded-by`: each sends only its
own), in the order they arrive. Each manager numbers its own events, so the merged stream's
id is a cursor: every manager's last id, `name:<epoch>-<seq>` entries joined by `,` in the
order of the names (names percent-encoded), e.g. `m1:1732441234567-12,m2:1732441299000-40`.
Sent back as `Last-Event-ID`, it resumes each manager's stream where it left off (a manager
that restarted since, or no longer keeps those events, sends its `reset`, naming itself).
A member the stream cannot reach is retried every `RETRY_S`; the stream says so with a
`member` event (`unreached`, then `resumed`), as when a member `joined` or `left` (its cursor
entry is then dropped). Members are looked up again every heartbeat.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from workflow_manager.api.forwarding import FORWARDED_BY
from workflow_manager.cluster.directory import Directory, Peer
from workflow_manager.errors import JournalError
from workflow_manager.events import EventHub, Resume, RunEvent, Subscription, parse_event_id
from workflow_manager.events.sse import SseMessage, comment, format_event, read_events
from workflow_manager.lazymodules import lazy_module

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy_module("httpx")  # loaded when a peer is first asked

__all__ = ["MAX_CURSOR_ENTRIES", "MergedStream", "cursor_of", "format_cursor", "parse_cursor"]

log = logging.getLogger(__name__)

MAX_CURSOR_ENTRIES = 256
RETRY_S = 1.0
CONNECT_TIMEOUT_S = 2.0
# A member's stream that brings nothing for this many heartbeats is lost: it is asked again.
IDLE_HEARTBEATS = 2.5
# Sent to a member the cursor has no entry for: no manager has this epoch, so it answers with
# a `reset` carrying its latest id, which seeds the cursor (the reset itself is not relayed).
_SEED_ID = "0-0"
# A name as `format_cursor` writes it: percent-encoded, so no `,` or `:` of its own.
_NAME = re.compile(r"[A-Za-z0-9_.~%-]{1,400}")
_PASSED_HEADERS = ("authorization", "cookie", "traceparent", "tracestate")


def parse_cursor(text: str) -> dict[str, str] | None:
    """A merged stream's id as {manager: its last event id}; None when it has another shape."""
    positions: dict[str, str] = {}
    entries = text.strip().split(",")
    if len(entries) > MAX_CURSOR_ENTRIES:
        return None
    for entry in entries:
        name, _, event_id = entry.rpartition(":")
        manager = unquote(name)
        if not _NAME.fullmatch(name) or manager in positions or parse_event_id(event_id) is None:
            return None
        positions[manager] = event_id.strip()
    return positions


def format_cursor(positions: Mapping[str, str]) -> str:
    """The merged stream's id for `positions` ({manager: last event id}), by name."""
    return ",".join(f"{quote(name, safe='')}:{positions[name]}" for name in sorted(positions))


@dataclass(frozen=True, slots=True)
class _Own:
    events: list[RunEvent]


@dataclass(frozen=True, slots=True)
class _Relayed:
    manager: str
    message: SseMessage


@dataclass(frozen=True, slots=True)
class _Seeded:
    manager: str
    event_id: str


@dataclass(frozen=True, slots=True)
class _Notice:
    manager: str
    status: str  # joined, left, unreached, resumed
    reason: str


@dataclass(frozen=True, slots=True)
class _Ended:
    overflow: str | None  # why the client must reconnect; None: the manager stops


_Item = _Own | _Relayed | _Seeded | _Notice | _Ended


def _notice(manager: str, status: str, reason: str) -> str:
    data = {"type": "member", "manager": manager, "status": status, "reason": reason}
    return format_event("member", data)


class _Lost(Exception):
    """Why a member's stream is not followed now."""


class MergedStream:
    """One client's merged stream: this manager's `subscription` (resumed as `resume` says)
    and each other member's stream relayed, from `cursor`'s positions."""

    def __init__(
        self,
        hub: EventHub,
        subscription: Subscription,
        resume: Resume,
        directory: Directory,
        client: httpx.AsyncClient,
        cursor: Mapping[str, str],
        request_headers: Mapping[str, str],
        workflow: str | None,
    ) -> None:
        self._hub = hub
        self._subscription = subscription
        self._resume = resume
        self._directory = directory
        self._me = directory.this_manager
        self._client = client
        self._since = {k: v for k, v in cursor.items() if k != self._me}
        self._positions: dict[str, str] = {**self._since, self._me: resume.latest_id}
        self._headers = {k: v for k, v in request_headers.items() if k in _PASSED_HEADERS}
        self._headers[FORWARDED_BY] = self._me
        self._params = {"scope": "local", **({"workflow": workflow} if workflow else {})}
        self._queue: asyncio.Queue[_Item] = asyncio.Queue(maxsize=hub.queue_limit)
        self._followers: dict[str, asyncio.Task[None]] = {}
        self._queued: dict[str, str | None] = {}  # each member's last id queued
        self._down: set[str] = set()  # members said to be unreached, not yet resumed
        self._left: dict[str, str | None] = {}  # members gone, and their last id sent
        self._pump: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<MergedStream {self._me} following {sorted(self._followers)}>"

    async def body(self) -> AsyncIterator[str]:
        """The response body: this manager's missed events, then every manager's live ones."""
        self._pump = asyncio.create_task(self._pump_own())
        try:
            yield "".join(self._head()) + await self._refresh(announce=False)
            loop = asyncio.get_running_loop()
            due = loop.time() + self._hub.heartbeat_s
            while True:
                try:
                    item = await asyncio.wait_for(self._queue.get(), self._hub.heartbeat_s)
                except TimeoutError:
                    yield comment("keepalive")
                    item = None
                if isinstance(item, _Ended):
                    if item.overflow is not None:
                        yield format_event("overflow", {"reason": item.overflow})
                    return
                if item is not None and (text := self._message(item)):
                    yield text
                if loop.time() >= due:
                    due = loop.time() + self._hub.heartbeat_s
                    if told := await self._refresh(announce=True):
                        yield told
        finally:
            self.close()

    def close(self) -> None:
        """Stop following every manager (the client went, or the stream ended)."""
        if self._pump is not None:
            self._pump.cancel()
        for follower in self._followers.values():
            follower.cancel()
        self._followers.clear()
        self._subscription.close()

    def _head(self) -> list[str]:
        head = [comment("connected")]
        if self._resume.reset is not None:
            reason = f"{self._resume.reset}; re-read the state you need, then follow this stream"
            data = {"reason": reason, "manager": self._me}
            head.append(format_event("reset", data, format_cursor(self._positions)))
        for event in self._resume.backlog:
            head.append(self._own(event))
        return head

    def _own(self, event: RunEvent) -> str:
        self._positions[self._me] = event.id
        return format_event(event.type, event.to_json(), format_cursor(self._positions))

    def _message(self, item: _Item) -> str:
        """What the client is sent for `item` (nothing for a seeded position, nor for what a
        member that has left queued: it is asked again from its last id if it comes back)."""
        if isinstance(item, _Relayed | _Seeded | _Notice) and item.manager in self._left:
            return ""
        match item:
            case _Own(events):
                return "".join(map(self._own, events))
            case _Seeded(manager, event_id):
                self._positions[manager] = event_id
                return ""
            case _Notice(manager, status, reason):
                return _notice(manager, status, reason)
            case _Relayed(manager, message):
                return self._relayed(manager, message)
        return ""

    def _relayed(self, manager: str, message: SseMessage) -> str:
        if message.id is not None:
            self._positions[manager] = message.id
        event_id = format_cursor(self._positions) if message.id is not None else None
        if message.event == "reset":
            try:
                data = {**message.json(), "manager": manager}
            except (ValueError, TypeError):
                data = {"reason": message.data, "manager": manager}
            return format_event("reset", data, event_id)
        head = f"id: {event_id}\n" if event_id is not None else ""
        lines = "".join(f"data: {line}\n" for line in message.data.split("\n"))
        return f"{head}event: {message.event}\n{lines}\n"

    async def _pump_own(self) -> None:
        """This manager's live events into the queue, until its subscription ends."""
        subscription = self._subscription
        while not subscription.closed:
            batch = await subscription.next_batch(self._hub.heartbeat_s)
            if batch:
                await self._queue.put(_Own(batch))
            elif subscription.overflowed:
                reason = (
                    f"this client fell {subscription.limit} events behind; reconnect with "
                    "Last-Event-ID set to the last id received to resume"
                )
                await self._queue.put(_Ended(reason))
                return
        await self._queue.put(_Ended(None))

    async def _refresh(self, announce: bool) -> str:
        """Follow the members alive now: start on those that joined (or came back: from their
        last id sent), stop those that left. What the client is told of it (never queued:
        the queue's only reader waits on this)."""
        try:
            peers = {peer.name: peer for peer in await self._directory.others()}
        except JournalError as err:
            log.info("merged event stream: the members are not looked up now (%s)", err)
            return ""
        told: list[str] = []
        for name in [n for n in [*self._followers, *self._since] if n not in peers]:
            if name in self._followers:
                self._followers.pop(name).cancel()
            self._since.pop(name, None)
            self._down.discard(name)
            self._left[name] = self._positions.pop(name, None)
            told.append(_notice(name, "left", "it is no longer a live member"))
        for name, peer in peers.items():
            if name in self._followers:
                continue
            since = self._since.pop(name, None)
            if name in self._left:
                since = self._left.pop(name)
                told.append(_notice(name, "resumed", "it is a live member again"))
            elif announce:
                told.append(_notice(name, "joined", "its events follow"))
            if since is not None:
                self._positions[name] = since
            self._followers[name] = asyncio.create_task(self._follow(peer, since))
        return "".join(told)

    async def _follow(self, peer: Peer, since: str | None) -> None:
        """`peer`'s own events into the queue from after `since`, asked again whenever its
        stream is lost (said once by an `unreached` notice, then `resumed`)."""
        self._queued[peer.name] = since
        while True:
            try:
                await self._relay(peer)
                continue  # it asked the client to resume (overflow): resume at once
            except (_Lost, httpx.HTTPError) as why:
                reason = str(why) or type(why).__name__
            if peer.name not in self._down:
                self._down.add(peer.name)
                log.info("merged event stream: %s not followed now: %s", peer.name, reason)
                notice = _Notice(peer.name, "unreached", f"its events may be missing: {reason}")
                await self._queue.put(notice)
            await asyncio.sleep(RETRY_S)

    async def _relay(self, peer: Peer) -> None:
        """Relay one connection to `peer`'s stream, from after the last id queued; returns
        when the member asks the client to resume (overflow), raises _Lost (or an httpx
        error) when the stream is lost."""
        if peer.api_url is None:
            raise _Lost("it advertises no API URL (--advertise-url)")
        since = self._queued.get(peer.name)
        headers = {**self._headers, "last-event-id": since or _SEED_ID}
        idle_s = IDLE_HEARTBEATS * self._hub.heartbeat_s
        timeout = httpx.Timeout(idle_s, connect=CONNECT_TIMEOUT_S)
        url = f"{peer.api_url}/api/events"
        async with self._client.stream(
            "GET", url, params=self._params, headers=headers, timeout=timeout
        ) as answer:
            if answer.status_code != 200:
                raise _Lost(f"it answered {answer.status_code}")
            if peer.name in self._down:
                self._down.discard(peer.name)
                await self._queue.put(_Notice(peer.name, "resumed", "its events follow again"))
            seeding = since is None
            async for message in read_events(answer.aiter_lines()):
                if message.event == "overflow":
                    return
                if message.id is not None:
                    self._queued[peer.name] = message.id
                if seeding and message.event == "reset" and message.id is not None:
                    await self._queue.put(_Seeded(peer.name, message.id))
                else:
                    await self._queue.put(_Relayed(peer.name, message))
                seeding = False
        raise _Lost("its stream ended")


def cursor_of(last_event_id: str | None, me: str) -> dict[str, str] | None:
    """The positions a client resumes from: a merged stream's cursor, or a plain event id
    (taken as this manager's); {} without one; None when it is neither."""
    if last_event_id is None:
        return {}
    if parse_event_id(last_event_id) is not None:
        return {me: last_event_id.strip()}
    return parse_cursor(last_event_id)
