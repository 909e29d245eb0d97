"""`GET /api/events`: run events as Server-Sent Events, from the manager's `EventHub`.

A stream starts with a `: connected` comment, then (with `Last-Event-ID`) the events the
client missed, then live events; an idle stream gets a `: keepalive` comment every
`heartbeat_s`. Two messages of its own tell a client to act:

    event: reset      the events after its Last-Event-ID are no longer kept (or another
                      manager process sent it: a restart, or another manager of a cluster):
                      re-read the state (`GET /api/job/{id}`), then carry on; its
                      id is the latest, so a later reconnect resumes from there
    event: overflow   the client read too slowly and fell `queue_limit` events behind: the
                      stream ends; reconnect with the last id received to resume

At most `max_event_streams` (`--max-event-streams`) streams are open at once, relayed ones
too: past it a client is answered 503 with `Retry-After`; a stream's place is free again as
soon as it ends (the client went, or the stream ended).

Without `job`, a partitioned manager's stream carries every manager's events
(workflow_manager.api.mergedevents; `?scope=local`: its own only). It takes one place on the
manager asked; the member streams it relays (asked with `x-wm-forwarded-by`) take a place in
each member's pool of relayed streams instead, `max_event_streams` for each other member, so
the clients of one manager cannot use up another's own places.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from workflow_manager.api.errors import unknown_workflow
from workflow_manager.api.forwarding import FORWARDED_BY, Forwarder
from workflow_manager.api.inputs import parse_job_id
from workflow_manager.api.limits import RETRY_AFTER_S
from workflow_manager.api.mergedevents import MergedStream, cursor_of
from workflow_manager.api.models import ErrorBody
from workflow_manager.cluster.directory import Directory
from workflow_manager.errors import JournalError, NotOwner
from workflow_manager.events import (
    EVENT_TYPES,
    EventFilter,
    EventHub,
    RunEvent,
    Subscription,
    parse_event_id,
)
from workflow_manager.events.sse import comment, format_event

__all__ = ["install_events", "router", "StreamSlots"]

log = logging.getLogger(__name__)

_EXAMPLE_ID = "1732441234567-42"
_EXAMPLE_CURSOR = "m1:1732441234567-42,m2:1732441299000-7"
_SCOPES = ("cluster", "local")
# One SSE message, as OpenAPI 3.1 describes a text/event-stream: its fields as an object.
_SSE_MESSAGE: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "event": {"type": "string", "enum": [*EVENT_TYPES, "reset", "overflow", "member"]},
        "id": {
            "type": "string",
            "description": "An event id `<epoch>-<seq>`; on the cluster's merged stream, a "
            "cursor of every manager's last id (`name:<epoch>-<seq>,...`).",
        },
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}
_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
# A relayed stream that brings nothing for this many heartbeats has lost its owner: it ends.
_IDLE_HEARTBEATS = 2.5

router = APIRouter()


class StreamSlots:
    """How many event streams are open, against the limit (`--max-event-streams`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    def __repr__(self) -> str:
        return f"<StreamSlots {self.open}/{self.limit}>"

    def take(self) -> None:
        """Hold a place for one stream; a 503 with `Retry-After` when all are taken."""
        if self.open >= self.limit:
            log.warning("answering 503: %d event streams are open, the limit", self.limit)
            raise HTTPException(
                status_code=503,
                detail=f"{self.limit} event streams are open, the manager's limit "
                "(--max-event-streams); try again later",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        self.open += 1

    def give_back(self) -> None:
        """A stream ended: its place is free."""
        self.open = max(0, self.open - 1)


class _Holding(Response):
    """An event stream's response that holds its place until it ends, however it ends (the
    client going before the stream's first byte too, when its generator never runs)."""

    def __init__(self, inner: Response, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release = release
        self.status_code = inner.status_code
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._inner(scope, receive, send)
            if self.background is not None:
                await self.background()
        finally:
            self._release()


def install_events(app: FastAPI, hub: EventHub) -> None:
    """Serve `hub`'s events at `GET /api/events` on `app`, at most `app.state.http`'s
    `max_event_streams` at once."""
    app.state.events = hub
    app.state.event_streams = StreamSlots(app.state.http.max_event_streams)
    app.state.relayed_streams = StreamSlots(app.state.http.max_event_streams)
    app.include_router(router)


def _message(event: RunEvent) -> str:
    return format_event(event.type, event.to_json(), event.id)


async def _stream(
    subscription: Subscription, head: list[str], heartbeat_s: float
) -> AsyncIterator[str]:
    """The response body: what was missed, then live events, until the client goes."""
    try:
        yield "".join(head)
        while not subscription.closed:
            batch = await subscription.next_batch(heartbeat_s)
            if batch:
                yield "".join(map(_message, batch))
            elif subscription.overflowed:
                reason = (
                    f"this client fell {subscription.limit} events behind; reconnect with "
                    "Last-Event-ID set to the last id received to resume"
                )
                yield format_event("overflow", {"reason": reason})
                return
            elif not subscription.closed:
                yield comment("keepalive")
    finally:
        subscription.close()


def _filter(request: Request, job: str | None, workflow: str | None) -> EventFilter:
    if job is not None:
        job = parse_job_id(job, "query parameter 'job'")
    if workflow is not None:
        known = request.app.state.service.workflows
        if workflow not in known:
            raise unknown_workflow(workflow, known)
    return EventFilter(job, workflow)


async def _from_owner(request: Request, job_id: str, heartbeat_s: float) -> Response | None:
    """Partitioned, for a running job of a partition another manager runs: that manager's
    stream, relayed (or a 503 naming the partition). None: follow the job here."""
    service = request.app.state.service
    directory = service.directory
    if directory is None:
        return None
    try:
        await service.find_job(job_id)
    except NotOwner as exc:
        if exc.partition is None:
            return None  # no job has that id yet: follow it here, as unpartitioned
        forwarder: Forwarder = request.app.state.forwarder
        # The owner sends at least a keepalive every heartbeat (ours, as deployed alike).
        return await forwarder.stream(request, exc, directory, _IDLE_HEARTBEATS * heartbeat_s)
    except JournalError as err:
        log.warning("events of job %s followed here: its owner cannot be told (%s)", job_id, err)
    return None


@router.get(
    "/api/events",
    tags=["events"],
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": _SSE_MESSAGE}},
            "description": "An endless stream of run events (Server-Sent Events).",
        },
        400: {"model": ErrorBody},
        404: {"model": ErrorBody},
        503: {
            "model": ErrorBody,
            "description": "As many event streams are open as the manager allows "
            "(`--max-event-streams`); or, with `job`, another manager runs the job and cannot "
            "be asked now (its partition is being taken over, or the manager is unreachable). "
            "Try again after `Retry-After`.",
        },
    },
)
async def event_stream(
    request: Request,
    # Declared `str` with a None default: OpenAPI then offers no null for them.
    job: Annotated[
        str,
        Query(
            description="Only this job (a UUID, in any letter case) and its child jobs.",
            json_schema_extra={"format": "uuid"},
        ),
    ] = None,  # type: ignore[assignment]
    workflow: Annotated[str, Query(description="Only jobs of this workflow.")] = None,  # type: ignore[assignment]
    scope: Annotated[
        str,
        Query(
            description="Without `job`, on a manager of several (`--partitions`): `cluster` "
            "(every manager's events, merged) or `local` (this manager's own only).",
            json_schema_extra={"enum": list(_SCOPES)},
        ),
    ] = "cluster",
    last_event_id: Annotated[
        str,
        Header(
            alias="Last-Event-ID",
            description="Resume after this event id (browsers send it when they reconnect): "
            "an id of this stream, `<epoch>-<seq>` or, on the merged stream, its cursor.",
        ),
    ] = None,  # type: ignore[assignment]
) -> Any:
    """Run events as they happen: job.scheduled|started|completed|failed|cancelled,
    step.dispatched|completed|failed|retrying|skipped|recovered. Each SSE id can be sent back as
    `Last-Event-ID` to resume.

    With several managers (`--partitions`), without `job`, any manager answers with every
    manager's events merged into one stream; its ids are cursors (`name:<epoch>-<seq>,...`,
    each manager's last id) that resume each manager's events where they left off, and a
    `member` message says when a manager joined, left or cannot be reached (its events may
    be missing then). `scope=local`: the manager asked's own events only. With `job`, any
    manager answers: a job another manager runs is followed on that manager's stream,
    relayed; it ends when that stream does or the job's partition moves, and the client
    reconnects (sending `Last-Event-ID`: a `reset` if the events now come from another
    manager)."""
    hub: EventHub = request.app.state.events
    wanted = _filter(request, job, workflow)
    if scope not in _SCOPES:
        raise HTTPException(
            status_code=400,
            detail=f"query parameter 'scope' {scope!r} is not one of {', '.join(_SCOPES)}",
        )
    directory: Directory | None = request.app.state.service.directory
    forwarded = FORWARDED_BY in request.headers
    if wanted.job is None and directory is not None and scope == "cluster" and not forwarded:
        return _merged(request, hub, wanted, directory, last_event_id)
    after = _own_position(last_event_id, directory)
    slots: StreamSlots = request.app.state.event_streams
    if wanted.job is None and directory is not None and forwarded:
        slots = await _relay_slots(request, directory)
    slots.take()
    try:
        if wanted.job is not None:
            relayed = await _from_owner(request, wanted.job, hub.heartbeat_s)
            if relayed is not None:
                return _Holding(relayed, slots.give_back)
    except BaseException:
        slots.give_back()
        raise
    subscription, resume = hub.subscribe(wanted, after)
    head = [comment("connected")]
    if resume.reset is not None:
        reason = f"{resume.reset}; re-read the state you need, then follow this stream"
        head.append(format_event("reset", {"reason": reason}, resume.latest_id))
    head.extend(map(_message, resume.backlog))
    stream = StreamingResponse(
        _stream(subscription, head, hub.heartbeat_s),
        media_type="text/event-stream",
        headers=_HEADERS,
    )

    def release() -> None:
        subscription.close()
        slots.give_back()

    return _Holding(stream, release)


def _bad_id(last_event_id: str) -> HTTPException:
    return HTTPException(
        status_code=400,
        detail=f"header 'Last-Event-ID' {last_event_id!r} is not an event id of this stream "
        f"(e.g. {_EXAMPLE_ID}, or on the merged stream of several managers a cursor such as "
        f"{_EXAMPLE_CURSOR}); leave it out to start from now",
    )


def _own_position(last_event_id: str | None, directory: Directory | None) -> str | None:
    """The id this manager's own stream resumes after: `last_event_id`, or this manager's
    entry of a merged stream's cursor (partitioned); a 400 when it is neither."""
    if last_event_id is None:
        return None
    if directory is None:
        if parse_event_id(last_event_id) is None:
            raise _bad_id(last_event_id)
        return last_event_id
    cursor = cursor_of(last_event_id, directory.this_manager)
    if cursor is None:
        raise _bad_id(last_event_id)
    return cursor.get(directory.this_manager)


async def _relay_slots(request: Request, directory: Directory) -> StreamSlots:
    """The pool of streams relayed into other managers' merged streams: `max_event_streams`
    for each other member (each holds at most that many merged streams)."""
    slots: StreamSlots = request.app.state.relayed_streams
    try:
        others = len(await directory.others())
    except JournalError:
        others = 1
    slots.limit = request.app.state.http.max_event_streams * max(1, others)
    return slots


def _merged(
    request: Request,
    hub: EventHub,
    wanted: EventFilter,
    directory: Directory,
    last_event_id: str | None,
) -> Response:
    """Every manager's events in one stream (workflow_manager.api.mergedevents)."""
    cursor = cursor_of(last_event_id, directory.this_manager)
    if cursor is None:
        raise _bad_id(last_event_id or "")
    slots: StreamSlots = request.app.state.event_streams
    slots.take()
    subscription, resume = hub.subscribe(wanted, cursor.get(directory.this_manager))
    forwarder: Forwarder = request.app.state.forwarder
    merged = MergedStream(
        hub, subscription, resume, directory, forwarder.client(streaming=True), cursor,
        request.headers, wanted.workflow,
    )  # fmt: skip
    stream = StreamingResponse(merged.body(), media_type="text/event-stream", headers=_HEADERS)

    def release() -> None:
        merged.close()
        slots.give_back()

    return _Holding(stream, release)
