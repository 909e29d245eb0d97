"""Step handlers for a simulated run: Python callables, a pyworker `Worker`'s handlers, and the
HTTP steps (the bridge's own `HttpStep`, sending to a callable instead of the network).

A handler answers one step request as a pyworker handler would: it takes the step input (and
optionally a `pyworker.StepContext`), returns a JSON object (or None, or a pydantic model) and
fails by raising. pyworker's own signature rules and invocation are used, so a handler that
works here works on a real worker. This package is the manager's one deliberate import of
pyworker besides the bridge and the conformance kit (tests/unit/test_layering.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workflow_manager.engine import Dispatch

__all__ = ["NoReply", "Answer", "StepCall", "step_call", "http_calls", "HttpHandler"]

# What an HTTP step's stand-in receives (an httpx.Request) and answers: an httpx.Response, or
# a dict (200 with it as JSON).
HttpHandler = Callable[[Any], Any]


class NoReply(Exception):  # noqa: N818 (a signal to the simulation, not an error of the step)
    """Raise it from a handler: the worker never answers this request (a worker that died, a
    lost reply), so the step's timeout, if any, decides what happens."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A handler's answer to one request: the reply's body, or the error a worker sends;
    `after`: the virtual seconds the worker takes to answer."""

    body: bytes
    error: str | None = None
    meta_patch: str | None = None  # the `x-meta-patch` header's JSON text
    after: float = 0.0


# A request in, its answer out (None: no answer ever).
StepCall = Callable[[Dispatch], Awaitable[Answer | None]]


class _Inline(concurrent.futures.Executor):
    """Runs a plain `def` handler at once, in order: a simulation is deterministic."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 (handed to the caller through the future)
            future.set_exception(exc)
        return future


_INLINE = _Inline()


def step_call(queue: str, handler: Any) -> StepCall:
    """`handler` (a callable, or a handler a pyworker `Worker` registered) as a `StepCall`.

    Raises:
        pyworker.StepDefinitionError: Its signature cannot take a step input.
    """
    from pyworker.handlers import StepHandler, inspect_handler

    registered = handler if isinstance(handler, StepHandler) else inspect_handler(queue, handler)

    async def call(dispatch: Dispatch) -> Answer | None:
        ctx = _context(dispatch)
        try:
            result = await registered.invoke(dict(dispatch.body), ctx, _INLINE)
        except NoReply:
            return None
        except Exception as exc:  # noqa: BLE001 (a failing handler is a failed attempt)
            return Answer(b"", _error_text(exc))
        if result is None:
            result = {}
        if not isinstance(result, Mapping):
            kind = type(result).__name__
            return Answer(b"", f"InvalidResult: a step must return a JSON object, got {kind}")
        patch = json.dumps(ctx.meta_patch) if ctx.meta_patch else None
        return Answer(json.dumps(result).encode(), None, patch)

    return call


def http_calls(
    workflows: Mapping[str, Any], respond: HttpHandler, environ: Mapping[str, str]
) -> dict[str, StepCall]:
    """A `StepCall` per HTTP step queue of `workflows`: the bridge's `HttpStep` (the same
    request, headers and answer rules), its requests answered by `respond` instead of sent.

    Raises:
        BridgeConfigError: No HTTP steps, or a header names an unset variable.
    """
    import httpx

    from workflow_manager.bridge.caller import HttpStep
    from workflow_manager.bridge.routes import collect_routes

    async def answer(request: httpx.Request) -> httpx.Response:
        response = respond(request)
        if asyncio.iscoroutine(response):
            response = await response
        if isinstance(response, Mapping):
            return httpx.Response(200, json=dict(response))
        if not isinstance(response, httpx.Response):
            kind = type(response).__name__
            raise TypeError(f"an HTTP stand-in must answer an httpx.Response or a dict, not {kind}")
        return response

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    slots = asyncio.Semaphore(1)
    routes = collect_routes(workflows, environ)
    return {
        queue: step_call(queue, HttpStep(route, client, slots)) for queue, route in routes.items()
    }


def _context(dispatch: Dispatch) -> Any:
    from pyworker import StepContext

    return StepContext(
        job_id=dispatch.job_id,
        step=dispatch.step,
        attempt=dispatch.attempt,
        correlation_id=dispatch.correlation_id,
        workflow=dispatch.workflow,
        headers={},
        message_id=dispatch.message_id,
        queue=dispatch.queue,
        meta=dict(dispatch.meta or {}),
    )


def _error_text(exc: BaseException) -> str:
    """The `x-error` a pyworker worker would send for `exc`: "Type: message"."""
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
