"""The pure engine: events in, commands out. No I/O, clock or randomness.

Imports the stdlib, `workflow_manager.config` and orjson (through `jsontext`, for speed) only.

Where to read: `engine.apply` hands each event to the core (`transition.Transition`, with
`submission`, `answers`, `children` and `failures`); the core calls the rules at the
extension points declared in `extension` (`Part`, `Work`); the rules are the parts registered
in `registry.PARTS`, one module each (`conditions`, `contracts`, `metadata`, `scheduling`,
`uniqueness`, `compensation`, `delays`, `admission`, `gates`, `waiting`, `fallbacks`,
`deadlines`); `control` answers cancel and retry requests, `handover` lets job trees go.
Timers are the typed union of `timers`, kept as text in the state and the journal.
"""

from workflow_manager.engine.commands import (
    CancelTimer,
    Command,
    Dispatch,
    Ignored,
    JobCompensating,
    JobDuplicate,
    JobFinished,
    JobPauseSet,
    JobQueued,
    JobRejected,
    JobScheduled,
    JobsReleased,
    JobStarted,
    NotifyOutcome,
    Refused,
    ScheduleFired,
    SchedulePauseSet,
    StartTimer,
    StepCompensation,
    StepFinished,
    StepSignalled,
    StepWaiting,
    Subject,
)
from workflow_manager.engine.engine import apply, replay
from workflow_manager.engine.events import (
    CancelRequested,
    Event,
    JobArchived,
    JobsHandedOver,
    JobSubmitted,
    PauseRequested,
    RetryRequested,
    SchedulePaused,
    SignalReceived,
    StepReplied,
    TimerFired,
)
from workflow_manager.engine.failures import outcome_body
from workflow_manager.engine.ids import canonical_uuid
from workflow_manager.engine.state import (
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
    "JobsHandedOver",
    "JobsReleased",
    "JobCompensating",
    "JobDuplicate",
    "JobFinished",
    "JobPauseSet",
    "JobQueued",
    "JobRejected",
    "JobScheduled",
    "JobStarted",
    "JobStatus",
    "JobSubmitted",
    "NotifyOutcome",
    "PauseRequested",
    "ParentLink",
    "Refused",
    "RetryRequested",
    "ScheduleFired",
    "SchedulePauseSet",
    "SchedulePaused",
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
