"""The pure engine: events in, commands out. No I/O, clock or randomness.

Imports the stdlib, `manager.config` and orjson (through `jsontext`, for speed) only.
"""

from manager.engine.commands import (
    CancelTimer,
    Command,
    Dispatch,
    Ignored,
    JobCompensating,
    JobFinished,
    JobQueued,
    JobRejected,
    JobScheduled,
    JobStarted,
    NotifyOutcome,
    Refused,
    StartTimer,
    StepCompensation,
    StepFinished,
    StepSignalled,
    StepWaiting,
    Subject,
)
from manager.engine.engine import apply, replay
from manager.engine.events import (
    CancelRequested,
    Event,
    JobArchived,
    JobSubmitted,
    RetryRequested,
    SignalReceived,
    StepReplied,
    TimerFired,
)
from manager.engine.failures import outcome_body
from manager.engine.ids import canonical_uuid
from manager.engine.state import (
    Compensation,
    CompensationRun,
    EngineState,
    Job,
    JobStatus,
    ParentLink,
    StepRun,
    StepStatus,
)

__all__ = [
    "CancelRequested",
    "CancelTimer",
    "Command",
    "Compensation",
    "CompensationRun",
    "Dispatch",
    "EngineState",
    "Event",
    "Ignored",
    "Job",
    "JobArchived",
    "JobCompensating",
    "JobFinished",
    "JobQueued",
    "JobRejected",
    "JobScheduled",
    "JobStarted",
    "JobStatus",
    "JobSubmitted",
    "NotifyOutcome",
    "ParentLink",
    "Refused",
    "RetryRequested",
    "SignalReceived",
    "StartTimer",
    "StepCompensation",
    "StepFinished",
    "StepSignalled",
    "StepWaiting",
    "StepReplied",
    "StepRun",
    "StepStatus",
    "Subject",
    "TimerFired",
    "apply",
    "canonical_uuid",
    "outcome_body",
    "replay",
]
