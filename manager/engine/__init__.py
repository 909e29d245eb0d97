"""The pure engine: events in, commands out. Imports nothing but the stdlib and manager.config."""

from manager.engine.commands import (
    Command,
    Dispatch,
    Ignored,
    JobFinished,
    JobRejected,
    JobStarted,
    NotifyOutcome,
)
from manager.engine.engine import apply, outcome_body, replay
from manager.engine.events import Event, JobSubmitted, StepReplied
from manager.engine.state import EngineState, Job, JobStatus, ParentLink, StepRun, StepStatus

__all__ = [
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
    "StepReplied",
    "StepRun",
    "StepStatus",
    "apply",
    "outcome_body",
    "replay",
]
