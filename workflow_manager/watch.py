"""`workflow-manager watch JOB_ID`: follow a job live over `GET /api/events?job=ID`.

The stream is opened first and the job read after (`GET /api/job/{id}`), so no event falls in
between. Each event is shown as it comes; the job's steps are read again (at most every
`refresh_s`) to draw them with their status and a progress bar for task steps. A dropped
stream is resumed with `Last-Event-ID`; a `reset` (events no longer kept) re-reads the job.
With several managers, a 503 (the manager running the job cannot be asked while its partition
moves) is tried again after its `Retry-After`, for as long as a lost connection is.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, TextIO

import httpx

from workflow_manager.client import api_headers
from workflow_manager.errors import ApiUnreachable, ManagerError
from workflow_manager.events.sse import SseMessage, read_events
from workflow_manager.payloads.view import ref_lines

__all__ = ["watch_job", "render_job_view", "progress_bar"]

ENDED = {"completed", "failed", "cancelled"}
_MARKS = {"completed": "✓", "running": "▶", "retrying": "↻", "failed": "✗"}
_RECONNECT_FOR_S = 30.0
_MAX_WAIT_S = 5.0  # at most this long between tries, whatever Retry-After says
_BAR_WIDTH = 24
_END_OF_STREAM = None
# How long a job seen ended waits for each of its last events still on their way.
_DRAIN_S = 2.0


def progress_bar(done: int, total: int, width: int = _BAR_WIDTH) -> str:
    """`[#########-----] 37/100` (an empty bar for a task with no children yet)."""
    filled = width * done // total if total else 0
    return f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total}"


def _step_line(entry: dict[str, Any], status: str) -> str:
    if entry.get("retrying"):
        status = "retrying"
    line = f"  {_MARKS.get(status, '?')} {entry.get('name', '?'):<24} {status:<9}"
    tasks = entry.get("tasks")
    join = entry.get("join")
    if join is not None:
        # Done means needed: the bar fills as children succeed, up to what the join needs.
        needed = join.get("needed", 0)
        line += f" {progress_bar(min(join.get('succeeded', 0), needed), needed)} needed"
        line += f"  join {join.get('policy')}: {join.get('failed', 0)} failed"
        line += f", {join.get('left', 0)} left"
        if join.get("met"):
            line += ", met" + (" (the rest left to finish)" if join.get("then") == "finish" else "")
    elif tasks is not None:
        total = entry.get("tasks_total", len(tasks))
        done = entry.get("tasks_done", total if status == "completed" else 0)
        line += f" {progress_bar(done, total)}"
    else:
        line += f" {entry.get('elapsed', 0.0):.2f}s"
    if (reduce := entry.get("reduce")) is not None and "reduced" in reduce:
        batches = reduce.get("batches", 0)
        line += f"  reduced {reduce['reduced']} in {batches} batch{'' if batches == 1 else 'es'}"
    if entry.get("attempt"):
        line += f"  attempt {entry['attempt']}"
    if status == "retrying" and entry.get("lastError") is not None:
        line += f"  last error: {str(entry['lastError'])[:120]}"
    if status == "failed" and entry.get("message") is not None:
        line += f"  error: {str(entry['message'])[:120]}"
    return line


def render_job_view(job: dict[str, Any]) -> list[str]:
    """A job from `GET /api/job/{id}` as lines: a header, then each started step in start order."""
    lines = [f"job {job.get('uuid')}  {job.get('workflow')}  {job.get('status')}"]
    entries = [
        (entry.get("startTime", ""), status, entry)
        for status in ("completed", "running", "failed")
        for entry in job.get(status) or []
        if entry.get("name") not in ("__start__", "__end__")
    ]
    entries.sort(key=lambda item: item[0])
    lines.extend(_step_line(entry, status) for _, status, entry in entries)
    if job.get("error") is not None:
        lines.append(f"  error: {str(job['error'])[:500]}")
    if stored := ref_lines(job.get("result"), "    "):
        lines.append("  result (stored values, by size; GET /api/payloads/... downloads them):")
        lines.extend(stored)
    lines.extend(_compensation_lines(job.get("compensations")))
    return lines


def _compensation_lines(compensations: dict[str, Any] | None) -> list[str]:
    """The compensations of a failed or cancelled job, in the order they run."""
    if not compensations:
        return []
    lines = [f"  compensations (the job {compensations.get('reason')}), last completed first:"]
    for run in compensations.get("runs") or []:
        line = f"    {run.get('name')} undoes {run.get('step')}: {run.get('status')}"
        if run.get("error") is not None:
            line += f"  error: {str(run['error'])[:120]}"
        lines.append(line)
    return lines


def _event_line(event: dict[str, Any]) -> str:
    clock = time.strftime("%H:%M:%S", time.localtime(event.get("at", 0.0)))
    where = f" {event['step']}" if event.get("step") else ""
    attempt = f" attempt {event['attempt']}" if event.get("attempt") else ""
    reason = f" ({event['reason']})" if event.get("reason") else ""
    return f"{clock} {event.get('type')}{where}{attempt}{reason}{_totals(event)}"


def _totals(event: dict[str, Any]) -> str:
    """A join or reduce task step's totals, as its step.completed/failed event tells them."""
    text = ""
    if isinstance(join := event.get("join"), dict):
        text += f"  join {join.get('policy')}: {join.get('succeeded')} of {join.get('needed')}"
        text += f" needed succeeded, {join.get('failed')} failed, {join.get('left')} left"
    if isinstance(reduce := event.get("reduce"), dict):
        text += f"  reduced {reduce.get('reduced')} in {reduce.get('batches')} batch(es)"
    return text


class _View:
    """Draws the job: redrawn in place on a terminal, printed when it changes otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self._drawn: list[str] = []

    @property
    def started(self) -> bool:
        """True once the job was drawn (it exists)."""
        return bool(self._drawn)

    def show(self, job: dict[str, Any]) -> None:
        lines = render_job_view(job)
        if lines == self._drawn:
            return
        if self.tty and self._drawn:
            self.out.write(f"\x1b[{len(self._drawn)}F\x1b[J")  # back to the block's top, clear
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()
        self._drawn = lines

    def event(self, event: dict[str, Any], job_id: str) -> None:
        if self.tty or event.get("job") != job_id:
            return  # a terminal shows the block; children show as their task step's progress
        self.out.write(_event_line(event) + "\n")
        self.out.flush()


async def _fetch(http: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    response = await http.get(f"/api/job/{job_id}")
    if response.status_code != 200:
        try:
            message = response.json().get("error", response.text)
        except ValueError:
            message = f"GET /api/job/{job_id} answered {response.status_code}"
        raise ManagerError(message)
    job: dict[str, Any] = response.json()
    return job


async def _pump(response: httpx.Response, queue: asyncio.Queue[SseMessage | None]) -> None:
    """Read the stream into `queue`; None once it ends (the manager went, or an overflow)."""
    try:
        async for message in read_events(response.aiter_lines()):
            await queue.put(message)
    except httpx.HTTPError:
        pass
    finally:
        await queue.put(_END_OF_STREAM)


class _Away(Exception):
    """`GET /api/events` answered 503: the manager running the job cannot be asked now (its
    partition is moving); try again after `retry_after_s`."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _retry_after_s(response: httpx.Response) -> float:
    """The answer's `Retry-After` seconds, within reason (1 when it gives none)."""
    try:
        return min(max(float(response.headers.get("retry-after", "1")), 0.1), _MAX_WAIT_S)
    except ValueError:
        return 1.0


def _error(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.text))
    except (ValueError, AttributeError):
        return response.text[:300]


@contextlib.asynccontextmanager
async def _stream(
    http: httpx.AsyncClient, job_id: str, last_id: str | None
) -> AsyncIterator[httpx.Response]:
    headers = {"Last-Event-ID": last_id} if last_id else {}
    async with http.stream("GET", "/api/events", params={"job": job_id}, headers=headers) as r:
        if r.status_code != 200:
            await r.aread()
            if r.status_code == 503:
                raise _Away(_error(r), _retry_after_s(r))
            raise ManagerError(f"GET /api/events answered {r.status_code}: {_error(r)}")
        yield r


async def _follow(
    http: httpx.AsyncClient, job_id: str, view: _View, last_id: str | None, refresh_s: float
) -> tuple[str | None, str | None]:
    """Follow one stream; returns (the job's final status or None if the stream ended, last id)."""
    async with _stream(http, job_id, last_id) as response:
        job = await _fetch(http, job_id)  # after the stream is open: nothing falls between
        view.show(job)
        if job.get("status") in ENDED:
            return job["status"], last_id
        queue: asyncio.Queue[SseMessage | None] = asyncio.Queue()
        pump = asyncio.create_task(_pump(response, queue))
        try:
            return await _consume(http, job_id, view, queue, refresh_s, last_id)
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump


async def _consume(
    http: httpx.AsyncClient,
    job_id: str,
    view: _View,
    queue: asyncio.Queue[SseMessage | None],
    refresh_s: float,
    last_id: str | None,
) -> tuple[str | None, str | None]:
    stale, shown_at = False, time.monotonic()
    while True:
        try:
            message = await asyncio.wait_for(queue.get(), refresh_s if stale else None)
        except TimeoutError:
            message = SseMessage("refresh", "{}", None)  # quiet for a while: draw now
        if message is _END_OF_STREAM or message.event == "overflow":
            return None, last_id  # reconnect, resuming from the last id
        if message.id:
            last_id = message.id
        if message.event not in ("refresh", "reset"):
            event = message.json()
            view.event(event, job_id)
            if event.get("job") == job_id and event.get("type", "").removeprefix("job.") in ENDED:
                view.show(await _fetch(http, job_id))
                return str(event["status"]), last_id
            stale = True
            if time.monotonic() - shown_at < refresh_s:
                continue
        job = await _fetch(http, job_id)
        if job.get("status") in ENDED:
            # It ended while its last events were on their way: print them, then the end.
            last_id = await _drain(view, job_id, queue, last_id)
            view.show(job)
            return job["status"], last_id
        view.show(job)
        stale, shown_at = False, time.monotonic()


async def _drain(
    view: _View, job_id: str, queue: asyncio.Queue[SseMessage | None], last_id: str | None
) -> str | None:
    """Show the events still coming up to the job's own end event (waiting at most
    `_DRAIN_S` for each); the last id seen."""
    while True:
        try:
            message = await asyncio.wait_for(queue.get(), _DRAIN_S)
        except TimeoutError:
            return last_id
        if message is _END_OF_STREAM or message.event in ("overflow", "reset"):
            return last_id
        if message.id:
            last_id = message.id
        event = message.json()
        view.event(event, job_id)
        if event.get("job") == job_id and event.get("type", "").removeprefix("job.") in ENDED:
            return last_id


async def watch_job(
    api_url: str,
    job_id: str,
    out: TextIO,
    api_token: str | None = None,
    refresh_s: float = 0.2,
    transport: httpx.AsyncBaseTransport | None = None,
    reconnect_for_s: float = _RECONNECT_FOR_S,
) -> str:
    """Follow job `job_id` until it ends; returns its status (completed, failed or cancelled).

    ManagerError when there is no such job; ApiUnreachable when the API cannot be reached
    (for `reconnect_for_s` once the job was found, or while the manager running it cannot be
    asked). `transport`: tests' stand-in for HTTP.
    """
    view = _View(out)
    last_id: str | None = None
    down_since: float | None = None
    timeout = httpx.Timeout(10.0, read=None)  # an idle stream gets only a heartbeat now and then
    async with httpx.AsyncClient(
        base_url=api_url.rstrip("/"),
        timeout=timeout,
        headers=api_headers(api_token),
        transport=transport,
    ) as http:
        while True:
            try:
                status, last_id = await _follow(http, job_id, view, last_id, refresh_s)
                down_since = None
            except (httpx.HTTPError, _Away) as exc:
                now = time.monotonic()
                down_since = down_since or now
                away = isinstance(exc, _Away)  # the job's manager is moving: wait, even at first
                if (not view.started and not away) or now - down_since > reconnect_for_s:
                    reason = (
                        f"{api_url} answered 503 for {now - down_since:.0f}s: {exc}"
                        if away
                        else f"cannot reach the manager's API at {api_url}: {exc}"
                    )
                    raise ApiUnreachable(reason) from exc
                await asyncio.sleep(exc.retry_after_s if isinstance(exc, _Away) else 0.5)
                continue
            if status is not None:
                return status
