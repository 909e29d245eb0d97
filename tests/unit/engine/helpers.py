"""Builders shared by the engine tests: workflows from YAML text, events, and command filters.

Workflows are validated straight into `workflow_manager.config.models` (not through the loader), so
these tests depend on the models and the engine only.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import yaml

from workflow_manager.config.models import Workflow, WorkflowFile
from workflow_manager.engine import (
    CancelRequested,
    CancelTimer,
    Command,
    Dispatch,
    EngineState,
    Ignored,
    JobFinished,
    JobStarted,
    JobSubmitted,
    Refused,
    RetryRequested,
    StartTimer,
    StepFinished,
    StepReplied,
    Subject,
    TimerFired,
    apply,
)

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
# JOB's trace id: derived from its id, as submissions here name no trace of their own.
TRACE = JOB.replace("-", "")
OTHER_JOB = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"
NOT_A_JOB = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"
AT_SUBMIT = 1.0
AT_REPLY = 2.0

C = TypeVar("C")
_EMPTY: Any = object()


def workflows(text: str) -> dict[str, Workflow]:
    """Every workflow of a YAML document, by name."""
    doc = WorkflowFile.model_validate(yaml.safe_load(text))
    return {wf.name: wf for wf in doc.workflows}


def workflow(text: str) -> Workflow:
    """The only workflow of a YAML document."""
    (wf,) = workflows(text).values()
    return wf


def make_state(text: str) -> EngineState:
    """A fresh engine state serving every workflow of a YAML document."""
    return EngineState.from_workflows(workflows(text))


def submit(
    state: EngineState,
    workflow: str = "w",
    payload: Any = _EMPTY,
    *,
    job_id: Any = JOB,
    reply_to: str | None = None,
    at: float = AT_SUBMIT,
) -> list[Command]:
    """Submit a job (payload defaults to `{}`) and return the commands."""
    body = {} if payload is _EMPTY else payload
    _, commands = apply(state, JobSubmitted(job_id, workflow, body, at, reply_to=reply_to))
    return commands


def encode(body: Any) -> bytes:
    """A reply body: bytes as given, anything else as JSON."""
    return body if isinstance(body, bytes) else json.dumps(body).encode()


def reply(
    state: EngineState,
    correlation_id: str,
    body: Any = b"",
    *,
    error: str | None = None,
    attempt: int | None = None,
    at: float = AT_REPLY,
) -> list[Command]:
    """Apply a worker's reply and return the commands."""
    job_id, _, step = correlation_id.partition(":")
    event = StepReplied(job_id, step, encode(body), at, error=error, attempt=attempt)
    _, commands = apply(state, event)
    return commands


def cid(job_id: str, step: str) -> str:
    """The correlation id of `step` in `job_id`."""
    return f"{job_id}:{step}"


def of_type(commands: Iterable[Command], kind: type[C]) -> list[C]:
    """The commands of one type, in order."""
    return [c for c in commands if isinstance(c, kind)]


def dispatches(commands: Iterable[Command]) -> list[Dispatch]:
    """The Dispatch commands, in order."""
    return of_type(commands, Dispatch)


def dispatched_steps(commands: Iterable[Command]) -> list[str]:
    """The step names dispatched, in order."""
    return [d.step for d in dispatches(commands)]


def finished(commands: Iterable[Command], job_id: str = JOB) -> JobFinished:
    """The one JobFinished command for `job_id`."""
    (done,) = [c for c in of_type(commands, JobFinished) if c.job_id == job_id]
    return done


def started_children(commands: Iterable[Command]) -> list[str]:
    """Ids of child jobs started, in order."""
    return [c.job_id for c in of_type(commands, JobStarted) if c.parent_id is not None]


def child_id(parent_id: str, step: str, index: int) -> str:
    """The id a child gets when its element carries no UUID `id` (computed independently)."""
    return str(uuid.uuid5(uuid.UUID(parent_id), f"{step}/{index}"))


def fire(state: EngineState, key: str, at: float) -> list[Command]:
    """Deliver a timer and return the commands."""
    _, commands = apply(state, TimerFired(key, at))
    return commands


def cancel(state: EngineState, job_id: str = JOB, at: float = AT_REPLY) -> list[Command]:
    """Apply a cancel request and return the commands."""
    _, commands = apply(state, CancelRequested(job_id, at))
    return commands


def retry_job(state: EngineState, job_id: str = JOB, at: float = AT_REPLY) -> list[Command]:
    """Apply a retry request and return the commands."""
    _, commands = apply(state, RetryRequested(job_id, at))
    return commands


def timers_started(commands: Iterable[Command]) -> dict[str, float]:
    """The timers a batch of commands starts: key -> due time."""
    return {c.key: c.due_at for c in of_type(commands, StartTimer)}


def timers_cancelled(commands: Iterable[Command]) -> set[str]:
    """The keys of the timers a batch of commands cancels."""
    return {c.key for c in of_type(commands, CancelTimer)}


def the_timer(commands: Iterable[Command]) -> StartTimer:
    """The one StartTimer of a batch of commands."""
    (started,) = of_type(commands, StartTimer)
    return started


def effects(commands: Iterable[Command]) -> list[Command]:
    """The commands without the `Subject` and the `StepFinished` reports (for watchers)."""
    return [c for c in commands if not isinstance(c, Subject | StepFinished)]


def refused(commands: list[Command]) -> Refused:
    """The one command of a refused request, which must be a Refused."""
    assert len(commands) == 1, commands
    (answer,) = commands
    assert isinstance(answer, Refused)
    assert answer.reason.strip()
    return answer


def snapshot(state: EngineState) -> EngineState:
    """A deep copy to compare against after an event that must change nothing."""
    return copy.deepcopy(state)


def assert_ignored(state: EngineState, commands: list[Command], before: EngineState) -> Ignored:
    """Exactly one Ignored command with a reason (after the Subject), and the state as it was."""
    assert isinstance(commands[0], Subject), commands
    commands = commands[1:]
    assert len(commands) == 1, commands
    (ignored,) = commands
    assert isinstance(ignored, Ignored)
    assert ignored.reason.strip()
    assert state == before
    return ignored


Answer = Callable[[Dispatch], Any]


def run(state: EngineState, commands: list[Command], answer: Answer) -> list[Command]:
    """Answer every dispatch, first in first out, until none is outstanding; all commands."""
    log = list(commands)
    pending = dispatches(commands)
    while pending:
        request = pending.pop(0)
        more = reply(state, request.correlation_id, answer(request))
        log.extend(more)
        pending.extend(dispatches(more))
    return log
