"""Asking the owner: a request about a job another manager runs goes to that manager's API.

Several managers share one journal, each running some of its partitions. A request for a
job of a partition this manager does not run (the orchestrator raises NotOwner) is sent, as
it came (method, path, query, body, and the caller's credentials and trace headers), to the
API of the manager holding that partition's lease, and its answer is returned as it is. A
forwarded request carries `x-wm-forwarded-by`: one that reaches a manager not running the
partition either (its lease moved meanwhile) is answered 503 there, never forwarded again.
No owner (the partition is being taken over), an owner that advertises no URL or cannot be
reached in time: 503 with Retry-After, naming the partition; except `GET /api/job/{id}`,
which then answers from the journal (the job as its committed rows make it), so reading a
job does not fail while its partition moves. A job the journal does not know at all (a
running child job has no row of its own until it ends, and none at all before its first
request or waiting step) may be another manager's: the others are asked in turn, and the
first that knows it answers (404 when none does). The credentials are passed on, never
logged.

`GET /api/events?job=` for such a job relays the owner's stream (`Forwarder.stream`) until it
ends or the partition moves; the client then reconnects and is routed again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from fastapi import Request, Response
from fastapi.responses import StreamingResponse

from workflow_manager.api.errors import error_response
from workflow_manager.api.service import JobService
from workflow_manager.cluster.directory import Directory, Peer
from workflow_manager.engine import Job
from workflow_manager.errors import JournalError, NotOwner
from workflow_manager.lazymodules import lazy_module

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy_module("httpx")  # loaded when a peer is first asked

__all__ = ["Forwarder", "NotForwarded", "find_job", "FORWARDED_BY", "ANSWERED_BY"]

log = logging.getLogger(__name__)

FORWARDED_BY = "x-wm-forwarded-by"  # on a forwarded request: the manager that forwarded it
ANSWERED_BY = "x-wm-answered-by"  # on a forwarded answer: the manager that answered it
TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 2.0
RETRY_AFTER_S = 1
_REQUEST_HEADERS = (
    "authorization", "cookie", "content-type", "accept", "x-meta", "traceparent", "tracestate",
    "last-event-id",
    # A webhook's signature and delivery id: the owner checks the request again itself.
    "x-hub-signature-256", "x-github-delivery", "stripe-signature", "x-webhook-signature",
    "x-webhook-timestamp", "x-webhook-id",
)  # fmt: skip
_ANSWER_HEADERS = (
    "content-type", "retry-after", "allow", "location", "www-authenticate", "cache-control",
    "x-accel-buffering",
)  # fmt: skip


class NotForwarded(Exception):
    """Why a request cannot be handed to the partition's owner (said in the 503)."""


class Forwarder:
    """Sends requests to the manager running their job, over one HTTP client."""

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._transport = transport  # tests: the other manager's app in process
        self._client: httpx.AsyncClient | None = None
        # Event streams on a client of their own: each holds a connection for as long as its
        # reader follows it, and must not use up the pool the other requests share.
        self._streams: httpx.AsyncClient | None = None

    async def answer(
        self, request: Request, exc: NotOwner, directory: Directory | None
    ) -> Response:
        """The answer to `request` of the manager running the job, or a 503 naming the
        partition when it cannot be asked."""
        try:
            return await self.forward(request, exc, directory)
        except NotForwarded as why:
            return self.unavailable(exc, why)

    async def close(self) -> None:
        """Close the connections to the other managers."""
        for client in (self._client, self._streams):
            if client is not None:
                await client.aclose()
        self._client = self._streams = None

    async def forward(
        self,
        request: Request,
        exc: NotOwner,
        directory: Directory | None,
        query: str | None = None,
    ) -> Response:
        """The answer to `request` (with `query` instead of its own, if given) of the owner of
        the job's partition; NotForwarded says why there is none. A job of no known
        partition: see `_search`."""
        if directory is None:
            raise NotForwarded("this manager does not know the others")
        if exc.partition is None:
            return await self._search(request, exc, directory)
        owner = await self._owner(request, exc.partition, directory)
        return await self.ask(request, owner, directory, query)

    async def stream(
        self, request: Request, exc: NotOwner, directory: Directory, idle_s: float
    ) -> Response:
        """The owner's event stream for `request` (`GET /api/events?job=`) relayed as it
        comes, or its answer when it is no stream; a 503 naming the partition when the owner
        cannot be asked. The relay ends when the owner's stream does, when it sends nothing
        for `idle_s`, or once the partition has another owner: the client reconnects and is
        routed again. (A job of no known partition: 404; the events route follows it itself.)"""
        partition = exc.partition
        if partition is None:
            return error_response(404, str(exc))
        try:
            owner = await self._owner(request, partition, directory)
            url, headers = self._outgoing(request, owner, directory)
            timeout = httpx.Timeout(idle_s, connect=CONNECT_TIMEOUT_S)
            streams = self._streaming()
            sent = streams.build_request("GET", url, headers=headers, timeout=timeout)
            answer = await self._reach(owner, lambda: streams.send(sent, stream=True), directory)
        except NotForwarded as why:
            return self.unavailable(exc, why)
        kept = _kept(answer, owner)
        if answer.status_code != 200:
            try:
                body = await answer.aread()
            except httpx.HTTPError as err:
                return self.unavailable(exc, NotForwarded(f"its owner {owner.name} went: {err}"))
            finally:
                await answer.aclose()
            return Response(body, status_code=answer.status_code, headers=kept)

        async def moved() -> bool:
            try:
                now = await directory.owner_of(partition)
            except JournalError:
                return False  # cannot tell: the owner's stream goes on
            return now is None or now.name != owner.name

        return StreamingResponse(_relay(answer, moved), headers=kept)

    def unavailable(self, exc: NotOwner, why: NotForwarded) -> Response:
        """The 503 for a request whose job's owner cannot be asked now: the partition, why."""
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        return error_response(503, f"{exc}, and {why}; try again shortly", headers)

    async def _owner(self, request: Request, partition: int, directory: Directory) -> Peer:
        """The manager running `partition` now, which this request may be sent to."""
        by = request.headers.get(FORWARDED_BY)
        if by is not None:
            raise NotForwarded(
                f"{by} forwarded this request here as to its owner: the partition is moving"
            )
        try:
            owner = await directory.owner_of(partition)
        except JournalError as err:
            raise NotForwarded(f"its owner cannot be looked up ({err})") from err
        if owner is None:
            raise NotForwarded("no manager holds it now (it is being taken over)")
        if owner.name == directory.this_manager:
            raise NotForwarded("this manager is handing it over")
        return owner

    async def _search(self, request: Request, exc: NotOwner, directory: Directory) -> Response:
        """A job this manager does not know, whose partition cannot be told (a running child
        that has written nothing yet): the first other manager that knows it answers; 404
        when none does. A forwarded request is not searched again."""
        if FORWARDED_BY not in request.headers:
            try:
                others = await directory.others()
            except JournalError:
                others = []
            for other in others:
                try:
                    answer = await self.ask(request, other, directory)
                except NotForwarded:
                    continue  # unreachable: it cannot be running the job for us anyway
                if answer.status_code != 404:
                    return answer
        return error_response(404, str(exc))

    async def ask(
        self, request: Request, to: Peer, directory: Directory, query: str | None = None
    ) -> Response:
        """`request` as it came (with `query` instead of its own, if given), to `to`'s API
        (marked forwarded: `to` answers it itself); its answer as it is. NotForwarded when
        `to` cannot be asked."""
        url, headers = self._outgoing(request, to, directory, query)
        body = await request.body()
        client = self._http()
        answer = await self._reach(
            to, lambda: client.request(request.method, url, content=body, headers=headers),
            directory,
        )  # fmt: skip
        log.debug(
            "%s %s forwarded to %s: %d", request.method, request.url.path, to.name,
            answer.status_code,
        )  # fmt: skip
        return Response(answer.content, status_code=answer.status_code, headers=_kept(answer, to))

    def _outgoing(
        self, request: Request, to: Peer, directory: Directory, query: str | None = None
    ) -> tuple[str, dict[str, str]]:
        """The URL and headers `request` is sent to `to` with."""
        if to.api_url is None:
            raise NotForwarded(f"its owner {to.name} advertises no API URL (--advertise-url)")
        query = request.url.query if query is None else query
        url = to.api_url + request.url.path + (f"?{query}" if query else "")
        headers = {k: v for k, v in request.headers.items() if k in _REQUEST_HEADERS}
        headers[FORWARDED_BY] = directory.this_manager
        return url, headers

    async def _reach(
        self, to: Peer, send: Callable[[], Awaitable[httpx.Response]], directory: Directory
    ) -> httpx.Response:
        """`send()`'s answer; NotForwarded naming `to` when it cannot be reached."""
        try:
            return await send()
        except httpx.HTTPError as err:
            directory.forget()  # it may have moved: look again next time
            raise NotForwarded(
                f"its owner {to.name} at {to.api_url} cannot be reached "
                f"({type(err).__name__}{': ' + str(err) if str(err) else ''})"
            ) from err

    def client(self, streaming: bool = False) -> httpx.AsyncClient:
        """The HTTP client requests (`streaming`: event streams) to other managers go on."""
        return self._streaming() if streaming else self._http()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
            self._client = httpx.AsyncClient(
                timeout=timeout, transport=self._transport, follow_redirects=False
            )
        return self._client

    def _streaming(self) -> httpx.AsyncClient:
        if self._streams is None:
            self._streams = httpx.AsyncClient(
                transport=self._transport,
                follow_redirects=False,
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=10),
            )
        return self._streams


def _kept(answer: httpx.Response, by: Peer) -> dict[str, str]:
    """The headers of `answer` passed on to the client, and who answered."""
    kept = {k: v for k, v in answer.headers.items() if k in _ANSWER_HEADERS}
    kept[ANSWERED_BY] = by.name
    return kept


async def _relay(
    answer: httpx.Response, moved: Callable[[], Awaitable[bool]]
) -> AsyncIterator[bytes]:
    """The owner's stream, chunk by chunk, until it ends, fails, goes quiet past its read
    timeout, or `moved()` (checked after each chunk: the owner sends one at least every
    heartbeat)."""
    try:
        async for chunk in answer.aiter_bytes():
            yield chunk
            if await moved():
                log.info("event stream from %s ended: its partition moved", answer.url.host)
                return
    except httpx.HTTPError as err:
        log.info("event stream from %s ended: %s", answer.url.host, type(err).__name__)
    finally:
        await answer.aclose()


async def find_job(request: Request, service: JobService, job_id: str) -> Job | Response | None:
    """`job_id` as `service.find_job` has it; a running job another manager runs: that
    manager's answer to `request`, or (it cannot be asked now) the job as the journal has it."""
    try:
        return await service.find_job(job_id)
    except NotOwner as exc:
        forwarder: Forwarder = request.app.state.forwarder
        try:
            return await forwarder.forward(request, exc, service.directory)
        except NotForwarded as why:
            log.info("%s; answered from the journal: %s", exc, why)
            return await service.find_job(job_id, replay_foreign=True)
