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
running child job has no row until it ends, nor any while its first step waits for a
signal) may be another manager's: the others are asked in turn, and the first that knows it
answers (404 when none does). The credentials are passed on, never logged.
"""

from __future__ import annotations

import logging

import httpx
from fastapi import Request, Response

from manager.api.errors import error_response
from manager.api.service import JobService
from manager.cluster.directory import Directory, Peer
from manager.engine import Job
from manager.errors import JournalError, NotOwner

__all__ = ["Forwarder", "NotForwarded", "find_job", "FORWARDED_BY", "ANSWERED_BY"]

log = logging.getLogger(__name__)

FORWARDED_BY = "x-wm-forwarded-by"  # on a forwarded request: the manager that forwarded it
ANSWERED_BY = "x-wm-answered-by"  # on a forwarded answer: the manager that answered it
TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 2.0
RETRY_AFTER_S = 1
_REQUEST_HEADERS = (
    "authorization", "cookie", "content-type", "accept", "x-meta", "traceparent", "tracestate",
)  # fmt: skip
_ANSWER_HEADERS = ("content-type", "retry-after", "allow", "location", "www-authenticate")


class NotForwarded(Exception):
    """Why a request cannot be handed to the partition's owner (said in the 503)."""


class Forwarder:
    """Sends requests to the manager running their job, over one HTTP client."""

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._transport = transport  # tests: the other manager's app in process
        self._client: httpx.AsyncClient | None = None

    async def answer(
        self, request: Request, exc: NotOwner, directory: Directory | None
    ) -> Response:
        """The answer to `request` of the manager running the job, or a 503 naming the
        partition when it cannot be asked."""
        try:
            return await self.forward(request, exc, directory)
        except NotForwarded as why:
            headers = {"Retry-After": str(RETRY_AFTER_S)}
            return error_response(503, f"{exc}, and {why}; try again shortly", headers)

    async def close(self) -> None:
        """Close the connections to the other managers."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def forward(
        self, request: Request, exc: NotOwner, directory: Directory | None
    ) -> Response:
        """The answer to `request` of the owner of the job's partition; NotForwarded says why
        there is none. A job of no known partition: see `_search`."""
        if directory is None:
            raise NotForwarded("this manager does not know the others")
        if exc.partition is None:
            return await self._search(request, exc, directory)
        by = request.headers.get(FORWARDED_BY)
        if by is not None:
            raise NotForwarded(
                f"{by} forwarded this request here as to its owner: the partition is moving"
            )
        try:
            owner = await directory.owner_of(exc.partition)
        except JournalError as err:
            raise NotForwarded(f"its owner cannot be looked up ({err})") from err
        if owner is None:
            raise NotForwarded("no manager holds it now (it is being taken over)")
        if owner.name == directory.this_manager:
            raise NotForwarded("this manager is handing it over")
        return await self._send(request, owner, directory)

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
                    answer = await self._send(request, other, directory)
                except NotForwarded:
                    continue  # unreachable: it cannot be running the job for us anyway
                if answer.status_code != 404:
                    return answer
        return error_response(404, str(exc))

    async def _send(self, request: Request, to: Peer, directory: Directory) -> Response:
        """`request` as it came, to `to`'s API; its answer as it is."""
        if to.api_url is None:
            raise NotForwarded(f"its owner {to.name} advertises no API URL (--advertise-url)")
        query = request.url.query
        url = to.api_url + request.url.path + (f"?{query}" if query else "")
        headers = {k: v for k, v in request.headers.items() if k in _REQUEST_HEADERS}
        headers[FORWARDED_BY] = directory.this_manager
        body = await request.body()
        try:
            answer = await self._http().request(request.method, url, content=body, headers=headers)
        except httpx.HTTPError as err:
            directory.forget()  # it may have moved: look again next time
            raise NotForwarded(
                f"its owner {to.name} at {to.api_url} cannot be reached "
                f"({type(err).__name__}{': ' + str(err) if str(err) else ''})"
            ) from err
        log.debug(
            "%s %s forwarded to %s: %d", request.method, request.url.path, to.name,
            answer.status_code,
        )  # fmt: skip
        kept = {k: v for k, v in answer.headers.items() if k in _ANSWER_HEADERS}
        kept[ANSWERED_BY] = to.name
        return Response(answer.content, status_code=answer.status_code, headers=kept)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
            self._client = httpx.AsyncClient(
                timeout=timeout, transport=self._transport, follow_redirects=False
            )
        return self._client


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
