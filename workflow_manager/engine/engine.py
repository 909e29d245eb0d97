"""The engine: `apply(state, event) -> (state, commands)`, with no I/O, clock or randomness.

Time comes in with each event (`at`); ids are derived from what the events carry; retry
waits are hashed, not drawn. So replaying the journal rebuilds exactly the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from workflow_manager.engine import bulk
from workflow_manager.engine.answers import reply
from workflow_manager.engine.commands import Command, JobDuplicate, JobRejected, Refused
from workflow_manager.engine.control import cancel, retry
from workflow_manager.engine.debouncing import recall_windows
from workflow_manager.engine.events import (
    BulkProgressed,
    BulkRequested,
    BulkSlice,
    CancelRequested,
    Event,
    JobArchived,
    JobsHandedOver,
    JobsRecalled,
    JobSubmitted,
    PauseRequested,
    QuotasSet,
    RateHistory,
    RetryRequested,
    SchedulePaused,
    ScheduleSeen,
    SignalReceived,
    StepReplied,
    TimerFired,
)
from workflow_manager.engine.handover import hand_over
from workflow_manager.engine.jobrates import remember_starts
from workflow_manager.engine.pausing import pause
from workflow_manager.engine.quotaset import set_quotas
from workflow_manager.engine.scheduling import pause_schedule, schedule_seen
from workflow_manager.engine.state import EngineState
from workflow_manager.engine.submission import submit
from workflow_manager.engine.transition import Transition
from workflow_manager.engine.waiting import signal

__all__ = ["apply", "replay"]

_EVENTS = (
    JobSubmitted,
    StepReplied,
    TimerFired,
    CancelRequested,
    RetryRequested,
    PauseRequested,
    SchedulePaused,
    ScheduleSeen,
    SignalReceived,
    JobArchived,
    JobsHandedOver,
    JobsRecalled,
    RateHistory,
    QuotasSet,
    BulkRequested,
    BulkSlice,
    BulkProgressed,
)


# The events that are not one job's transition: the hand-over of trees, ended jobs recalled,
# rate limits' recent starts, quotas of cluster-wide limits, and bulk actions.
_WHOLE: dict[type, Callable[[EngineState, Any], list[Command]]] = {
    JobsHandedOver: lambda state, event: hand_over(state, event.roots),
    JobsRecalled: recall_windows,
    RateHistory: remember_starts,
    QuotasSet: set_quotas,
    BulkRequested: bulk.request,
    BulkSlice: lambda state, event: bulk.carry_out(state, event, apply),
    BulkProgressed: bulk.progressed,
}


# The events about a schedule, not a job: no subject, nothing to drain.
_SCHEDULES: dict[type, Callable[[Transition, Any], None]] = {
    SchedulePaused: pause_schedule,
    ScheduleSeen: schedule_seen,
}


def apply(state: EngineState, event: Event) -> tuple[EngineState, list[Command]]:
    """Apply one event: update `state` in place and return it with the commands to carry out.

    Unless the event was refused or rejected, the first command is its `Subject`.
    """
    return _apply(state, event, replaying=False)


def _apply(
    state: EngineState, event: Event, replaying: bool
) -> tuple[EngineState, list[Command]]:
    if not isinstance(event, _EVENTS):
        raise TypeError(f"not an engine event: {event!r}")
    whole = _WHOLE.get(type(event))
    if whole is not None:
        return state, whole(state, event)
    transition = Transition(state, event.at, replaying=replaying)
    if isinstance(event, JobSubmitted):
        submit(transition, event)
    elif isinstance(event, StepReplied):
        reply(transition, event)
    elif isinstance(event, TimerFired):
        transition.timer_fired(event.key)
    elif isinstance(event, CancelRequested):
        cancel(transition, event.job_id)
    elif isinstance(event, RetryRequested):
        retry(transition, event.job_id)
    elif isinstance(event, PauseRequested):
        pause(transition, event)
    elif isinstance(event, SignalReceived):
        signal(transition, event)
    elif (of_schedule := _SCHEDULES.get(type(event))) is not None:
        of_schedule(transition, event)
        return state, transition.commands
    else:
        assert isinstance(event, JobArchived)  # the others are _WHOLE's
        transition.archive(event.job_id)
        return state, transition.commands
    transition.drain()
    commands = transition.commands
    if not (commands and isinstance(commands[0], JobRejected | JobDuplicate | Refused)):
        commands.insert(0, transition.subject)
    return state, commands


def replay(state: EngineState, events: Iterable[Event]) -> EngineState:
    """Rebuild state by applying `events` in order; the commands were carried out already.

    Replaying, a step's `Dispatch` is not made (its request was journaled when it was): a
    recovery dispatches every running child again, and building their requests was a tenth
    of it."""
    for event in events:
        _apply(state, event, replaying=True)
    return state
