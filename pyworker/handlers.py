"""Step handlers: signature inspection at decoration time, input validation and invocation.

A handler takes the step input first and, optionally, a StepContext second:
`def f(data)`, `def f(data, ctx)`, `async def f(data: Model, ctx)`. When the first parameter
is annotated with a pydantic model the input is validated into it; a returned model is dumped
back to a JSON object. Plain `def` handlers run in a thread pool so they never block the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from pyworker.context import StepContext
from pyworker.errors import SettingsError, StepDefinitionError

__all__ = ["StepHandler", "inspect_handler", "check_queue_name", "prefixed_handlers"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_MAX_QUEUE_BYTES = 255


@dataclass(frozen=True)
class StepHandler:
    """A registered handler and what its signature told us about how to call it."""

    queue: str
    func: Callable[..., Any]
    is_async: bool
    input_model: type[BaseModel] | None
    takes_context: bool

    @property
    def name(self) -> str:
        """The handler's qualified name, for messages."""
        return _name(self.func)

    def parse_input(self, data: dict[str, Any]) -> Any:
        """The step input to pass the handler; raises pydantic's ValidationError when invalid."""
        if self.input_model is None:
            return data
        return self.input_model.model_validate(data)

    async def invoke(self, data: dict[str, Any], ctx: StepContext, executor: Executor) -> Any:
        """Validate `data`, call the handler (sync ones in `executor`), return its plain result."""
        step_input = self.parse_input(data)
        args = (step_input, ctx) if self.takes_context else (step_input,)
        if self.is_async:
            result = await self.func(*args)
        else:
            call = functools.partial(contextvars.copy_context().run, self.func, *args)
            result = await asyncio.get_running_loop().run_in_executor(executor, call)
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json")
        return result


def check_queue_name(queue: object) -> str:
    """`queue` if it is a usable RabbitMQ queue name; raises StepDefinitionError otherwise."""
    if not isinstance(queue, str) or not queue.strip():
        raise StepDefinitionError(
            f"step queue name must be a non-empty string, got {queue!r} "
            "(use it as @worker.step('my-step'))"
        )
    if queue.startswith("amq."):
        raise StepDefinitionError(f"step queue name {queue!r}: names starting 'amq.' are reserved")
    if len(queue.encode("utf-8")) > _MAX_QUEUE_BYTES:
        raise StepDefinitionError(f"step queue name {queue[:40]!r}...: longer than 255 bytes")
    return queue


def prefixed_handlers(handlers: Mapping[str, StepHandler], prefix: str) -> list[StepHandler]:
    """The handlers with their queue names as declared: `prefix` + step queue name.

    Raises:
        SettingsError: The prefix makes a queue name RabbitMQ would refuse.
    """
    if not prefix:
        return list(handlers.values())
    try:
        return [
            dataclasses.replace(handler, queue=check_queue_name(prefix + queue))
            for queue, handler in handlers.items()
        ]
    except StepDefinitionError as exc:
        raise SettingsError(f"queue_prefix {prefix!r} makes a bad queue name: {exc}") from exc


def _name(func: Callable[..., Any]) -> str:
    return getattr(func, "__qualname__", None) or repr(func)


def _is_async(func: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(func, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _signature(queue: str, func: Callable[..., Any]) -> inspect.Signature:
    try:
        return inspect.signature(func, eval_str=True)
    except (NameError, TypeError, SyntaxError, AttributeError):
        pass  # an annotation cannot be evaluated; only the first parameter's matters (below)
    except ValueError as exc:
        message = f"step {queue!r}: cannot inspect handler {func!r}: {exc}"
        raise StepDefinitionError(message) from exc
    return inspect.signature(func)


def _input_model(queue: str, func: Callable[..., Any], param: inspect.Parameter) -> Any:
    annotation = param.annotation
    if isinstance(annotation, str):  # left unevaluated because another annotation failed
        namespace = getattr(inspect.unwrap(func), "__globals__", {})
        try:
            annotation = eval(annotation, namespace)  # what inspect.signature(eval_str=True) does
        except Exception as exc:
            raise StepDefinitionError(
                f"step {queue!r}: cannot resolve the annotation {param.annotation!r} of "
                f"parameter {param.name!r} of {_name(func)} ({type(exc).__name__}: {exc}); "
                "define the model at module level"
            ) from exc
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    return None


def inspect_handler(queue: str, func: Callable[..., Any]) -> StepHandler:
    """Check `func`'s signature and work out how to call it; StepDefinitionError if unusable."""
    if not callable(func):
        raise StepDefinitionError(f"step {queue!r}: {func!r} is not callable")
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise StepDefinitionError(
            f"step {queue!r}: handler {_name(func)} is a generator; "
            "a step must return one JSON object"
        )
    params = list(_signature(queue, func).parameters.values())
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    required_kw = [
        p.name
        for p in params
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    name = _name(func)
    if not positional and not var_positional:
        raise StepDefinitionError(
            f"step {queue!r}: handler {name} takes no parameters; it must take the step input "
            f"first and optionally the context second, e.g. def {name}(data, ctx)"
        )
    if len(required) > 2 or required_kw:
        extra = [p.name for p in required[2:]] + required_kw
        raise StepDefinitionError(
            f"step {queue!r}: handler {name} has required parameters pyworker cannot fill: "
            f"{', '.join(extra)} (a handler takes (data) or (data, ctx))"
        )
    return StepHandler(
        queue=queue,
        func=func,
        is_async=_is_async(func),
        input_model=_input_model(queue, func, positional[0]) if positional else None,
        takes_context=len(positional) >= 2 or var_positional,
    )
