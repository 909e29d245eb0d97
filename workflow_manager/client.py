"""Talking to a running manager from outside: trigger a job by message, read a job over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aio_pika
import httpx

from workflow_manager.errors import ApiUnreachable, ManagerError
from workflow_manager.events.sse import read_events
from workflow_manager.transport import (
    DEFAULT_QUEUE,
    HEADER_STATUS,
    TRIGGER_WORKFLOW_HEADER,
    header_text,
    trigger_queue,
)
from workflow_manager.transport.errors import broker_errors
from workflow_manager.transport.naming import HEADER_DELAY, HEADER_META, HEADER_PRIORITY

__all__ = [
    "Outcome",
    "api_headers",
    "submit_job",
    "submit_over_api",
    "follow_job",
    "fetch_job",
    "control_job",
    "fork_job",
    "bulk_jobs",
    "fetch_bulk",
    "progress_line",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a job ended, as its outcome message said: status and body."""

    job_id: str
    status: str
    body: dict[str, Any]


async def submit_job(
    amqp_url: str,
    workflow: str,
    payload: dict[str, Any],
    job_id: str,
    *,
    queue: str = DEFAULT_QUEUE,
    wait: bool = False,
    on_progress: Callable[[], Any] | None = None,
    progress_every_s: float = 0.5,
    priority: int = 0,
    delay_s: float | None = None,
    meta: dict[str, Any] | None = None,
) -> Outcome | None:
    """Publish a trigger for `workflow`; with `wait`, return the outcome message when it comes.

    A non-zero `priority` (0-9) goes in the trigger's `x-priority` header, a `delay_s` (the
    job starts that many seconds from now) in `x-delay`, `meta` (job metadata) in `x-meta`.
    """
    headers: dict[str, Any] = {TRIGGER_WORKFLOW_HEADER: workflow}
    if priority:
        headers[HEADER_PRIORITY] = priority
    if delay_s is not None:
        headers[HEADER_DELAY] = delay_s
    if meta is not None:
        headers[HEADER_META] = json.dumps(meta)
    with broker_errors("cannot connect to RabbitMQ"):
        connection = await aio_pika.connect(amqp_url, timeout=10)
    async with connection:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        reply_queue = await channel.declare_queue(exclusive=True) if wait else None
        message = aio_pika.Message(
            json.dumps(payload).encode(),
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            correlation_id=job_id,
            reply_to=reply_queue.name if reply_queue else None,
            headers=headers,
        )
        with broker_errors(f"cannot publish to '{trigger_queue(queue)}' (is the manager running?)"):
            await channel.default_exchange.publish(message, trigger_queue(queue), mandatory=True)
        if reply_queue is None:
            return None
        return await _await_outcome(reply_queue, job_id, on_progress, progress_every_s)


_ENDED = ("completed", "failed", "cancelled")
# While waiting over HTTP, the job is read again this often even if its event stream is quiet
# (a stream that ended, a proxy that buffers it): the wait cannot hang on a lost event.
_RECHECK_S = 1.0


async def submit_over_api(
    api_url: str,
    workflow: str,
    payload: dict[str, Any],
    job_id: str,
    *,
    wait: bool = False,
    on_progress: Callable[[dict[str, Any]], Awaitable[Any]] | None = None,
    priority: int = 0,
    delay_s: float | None = None,
    meta: dict[str, Any] | None = None,
    api_token: str | None = None,
) -> Outcome | None:
    """Start a job with `POST /api/workflow/{name}` on the manager at `api_url`; with `wait`,
    follow it until it ends and return how (as an outcome message would say it).

    The way to start a job on a manager known by its URL: its queue name does not matter.
    """
    params: dict[str, Any] = {"id": job_id}
    if priority:
        params["priority"] = priority
    if delay_s is not None:
        params["delay"] = delay_s
    if meta is not None:
        params["meta"] = json.dumps(meta)
    path = f"/api/workflow/{quote(workflow, safe='')}?{urlencode(params)}"
    if not wait:
        await _call(api_url, "POST", path, api_token, payload)
        return None
    ended = asyncio.Event()
    final: dict[str, Any] = {}

    async def check() -> None:
        job = await fetch_job(api_url, job_id, api_token)
        if on_progress is not None:
            await on_progress(job)
        if job.get("status") in _ENDED:
            final.update(job)
            ended.set()

    opened = asyncio.Event()
    follower = asyncio.create_task(follow_job(api_url, job_id, check, opened, 0.25, api_token))
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(opened.wait(), 5.0)  # no event of the job falls before it
        await _call(api_url, "POST", path, api_token, payload)
        while not ended.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ended.wait(), _RECHECK_S)
            if not ended.is_set():
                await check()
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    status = str(final["status"])
    body = (final.get("result") or {}) if status == "completed" else {"error": final.get("error")}
    return Outcome(job_id, status, body)


async def _await_outcome(
    reply_queue: aio_pika.abc.AbstractQueue,
    job_id: str,
    on_progress: Callable[[], Any] | None,
    every_s: float,
) -> Outcome:
    async with reply_queue.iterator() as messages:
        next_message = asyncio.ensure_future(anext(messages))
        try:
            while True:
                done, _ = await asyncio.wait({next_message}, timeout=every_s)
                if done:
                    break
                if on_progress is not None:
                    await on_progress()
            incoming = next_message.result()
        finally:
            next_message.cancel()
        async with incoming.process():
            status = header_text(incoming.headers, HEADER_STATUS) or "unknown"
            try:
                body = json.loads(incoming.body) if incoming.body else {}
            except ValueError:
                body = {"raw": incoming.body.decode("utf-8", errors="replace")}
            return Outcome(job_id, status, body)


async def follow_job(
    api_url: str,
    job_id: str,
    on_change: Callable[[], Awaitable[Any]],
    opened: asyncio.Event | None = None,
    every_s: float = 0.25,
    api_token: str | None = None,
) -> None:
    """Await `on_change()` when job `job_id` (or a child) changes, at most every `every_s`.

    Follows `GET /api/events?job=ID` and sets `opened` once it follows (or has given up), so
    a caller can start the job after that and miss no event. Returns quietly when the stream
    ends or the API cannot be reached: progress is a courtesy, the outcome message is what
    counts.
    """
    url = f"{api_url.rstrip('/')}/api/events"
    shown_at = 0.0
    try:
        async with (
            httpx.AsyncClient(
                timeout=httpx.Timeout(10.0, read=None), headers=api_headers(api_token)
            ) as http,
            http.stream("GET", url, params={"job": job_id}) as response,
        ):
            if opened is not None:
                opened.set()
            if response.status_code != 200:
                return
            async for _ in read_events(response.aiter_lines()):
                if time.monotonic() - shown_at >= every_s:
                    await on_change()
                    shown_at = time.monotonic()
    except httpx.HTTPError:
        return
    finally:
        if opened is not None:
            opened.set()


async def fetch_job(api_url: str, job_id: str, api_token: str | None = None) -> dict[str, Any]:
    """A job as `GET /api/job/{id}` shows it; ManagerError with the API's message otherwise."""
    return await _call(api_url, "GET", f"/api/job/{job_id}", api_token)


async def control_job(
    api_url: str, job_id: str, action: str, api_token: str | None = None
) -> dict[str, Any]:
    """Cancel (`DELETE /api/job/{id}`), retry, pause or resume (`POST .../{action}`) a job;
    returns the job."""
    if action == "cancel":
        return await _call(api_url, "DELETE", f"/api/job/{job_id}", api_token)
    return await _call(api_url, "POST", f"/api/job/{job_id}/{action}", api_token)


async def fork_job(
    api_url: str,
    job_id: str,
    step: str,
    *,
    input: dict[str, Any] | None = None,
    definition: str = "current",
    children: str = "failed",
    api_token: str | None = None,
) -> dict[str, Any]:
    """Fork a finished job from `step` (`POST /api/job/{id}/fork`): `{"id", "forked_from",
    "step"}`, the new job's id first; ManagerError with the API's message otherwise."""
    body: dict[str, Any] = {"from": step, "definition": definition, "children": children}
    if input is not None:
        body["input"] = input
    return await _call(api_url, "POST", f"/api/job/{job_id}/fork", api_token, body)


async def bulk_jobs(
    api_url: str,
    action: str,
    filter: dict[str, Any],
    *,
    fork: dict[str, Any] | None = None,
    dry_run: bool = False,
    api_token: str | None = None,
) -> dict[str, Any]:
    """Act on every top-level job `filter` matches (`POST /api/jobs/bulk`), or with `dry_run`
    only say which: `{"id", "action", "matched", "sample"}` (`id` null for a dry run; `fork`:
    a fork's options, for action fork); ManagerError with the API's message otherwise."""
    body: dict[str, Any] = {"action": action, "filter": filter, "dry_run": dry_run}
    if fork is not None:
        body["fork"] = fork
    return await _call(api_url, "POST", "/api/jobs/bulk", api_token, body)


async def fetch_bulk(api_url: str, bulk_id: str, api_token: str | None = None) -> dict[str, Any]:
    """Where a bulk action stands, as `GET /api/bulk/{id}` shows it."""
    return await _call(api_url, "GET", f"/api/bulk/{quote(bulk_id, safe='')}", api_token)


async def signal_step(
    api_url: str, job_id: str, step: str, payload: dict[str, Any], api_token: str | None = None
) -> dict[str, Any]:
    """Signal a waiting step (`POST /api/job/{id}/signal/{step}`): `{"job", "step", "status"}`."""
    path = f"/api/job/{job_id}/signal/{quote(step, safe='')}"
    return await _call(api_url, "POST", path, api_token, payload)


async def schedules(
    api_url: str, action: str = "list", target: str = "", api_token: str | None = None
) -> Any:
    """`GET /api/schedules` (action list), or pause / resume `target` (`WORKFLOW/NAME`)."""
    if action == "list":
        return (await _call(api_url, "GET", "/api/schedules", api_token))["schedules"]
    workflow, _, name = target.partition("/")
    path = f"/api/schedules/{quote(workflow, safe='')}/{quote(name, safe='')}/{action}"
    return await _call(api_url, "POST", path, api_token)


def api_headers(api_token: str | None) -> dict[str, str]:
    """The headers a call to the manager's API carries: the bearer token when there is one."""
    return {"Authorization": f"Bearer {api_token}"} if api_token else {}


async def _call(
    api_url: str, method: str, path: str, api_token: str | None, body: Any = None
) -> dict[str, Any]:
    url = f"{api_url.rstrip('/')}{path}"
    headers = api_headers(api_token)
    if method != "GET":
        # The API takes only JSON on a state-changing route (workflow_manager.api.origin), a body or
        # none (cancel, retry, pause, resume).
        headers["Content-Type"] = "application/json"
    content = None if body is None else json.dumps(body).encode()
    try:
        async with httpx.AsyncClient(timeout=10, headers=headers) as client:
            response = await client.request(method, url, content=content)
    except httpx.HTTPError as exc:
        raise ApiUnreachable(f"cannot reach the manager's API at {api_url}: {exc}") from exc
    if not response.is_success:  # 200, or 201 for a fork, 202 for a bulk action
        with contextlib.suppress(ValueError):
            raise ManagerError(response.json().get("error", response.text))
        raise ManagerError(f"{url} answered {response.status_code}: {response.text[:200]}")
    answer: dict[str, Any] = response.json()  # every route of the API answers an object
    return answer


def progress_line(job: dict[str, Any]) -> str:
    """One line of progress: steps done out of total, and children done out of total."""
    progress = job.get("progress") or {}
    steps = f"steps {progress.get('steps_done', '?')}/{progress.get('steps_total', '?')}"
    if progress.get("children_total"):
        steps += f", children {progress.get('children_done')}/{progress.get('children_total')}"
    return f"{job.get('status', '?')}: {steps}"
