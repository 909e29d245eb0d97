"""The pure engine: events in, commands out. Imports nothing but the stdlib and manager.config."""

from manager.engine.commands import (
    CancelTimer,
    Command,
    Dispatch,
    Ignored,
    JobFinished,
    JobRejected,
    JobStarted,
    NotifyOutcome,
    Refused,
    StartTimer,
)
from manager.engine.engine import apply, outcome_body, replay
from manager.engine.events import (
    CancelRequested,
    Event,
    JobSubmitted,
    RetryRequested,
    StepReplied,
    TimerFired,
)
from manager.engine.state import EngineState, Job, JobStatus, ParentLink, StepRun, StepStatus
from manager.engine.transition import canonical_uuid

__all__ = [
    "CancelRequested",
    "CancelTimer",
    "Command",
    "Dispatch",
    "EngineState",
    "Event",
    "Ignored",
    "Job",
    "JobFinished",
    "JobRejected",
    "JobStarted",
    "JobStatus",
    "JobSubmitted",
    "NotifyOutcome",
    "ParentLink",
    "Refused",
    "RetryRequested",
    "StartTimer",
    "StepReplied",
    "StepRun",
    "StepStatus",
    "TimerFired",
    "apply",
    "canonical_uuid",
    "outcome_body",
    "replay",
]
