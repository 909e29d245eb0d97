"""The pure engine: events in, commands out. No I/O, clock or randomness.

Imports the stdlib, `workflow_manager.config` and orjson (through `jsontext`, for speed) only.

Where to read: `engine.apply` hands each event to the core (`transition.Transition`, with
`submission`, `answers`, `children` and `failures`); the core calls the rules at the
extension points declared in `extension` (`Part`, `Work`); the rules are the parts registered
in `registry.PARTS`, one module each (`conditions`, `contracts`, `metadata`, `scheduling`,
`debouncing`, `uniqueness`, `compensation`, `delays`, `admission`, `gates`, `waiting`, `fallbacks`,
`deadlines`); `control` answers cancel and retry requests, `handover` lets job trees go,
`quotas` and `quotaset` give each partition its quota of a limit that holds across managers.
Timers are the typed union of `timers`, kept as text in the state and the journal.

The package's names (`__all__`) load together on the first read of one: importing a module
of the package runs no other, so the command line can read a constant of `statuses` or
`fanout` for its help without loading the engine and pydantic's models.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workflow_manager.engine.commands import (
        BulkProgress,
        CancelTimer,
        Command,
        Dispatch,
        Ignored,
        JobCompensating,
        JobDebounced,
        JobDuplicate,
        JobFinished,
        JobForked,
        JobPauseSet,
        JobQueued,
        JobRejected,
        JobScheduled,
        JobsReleased,
        JobStarted,
        JobThrottled,
        NotifyOutcome,
        QuotasUsed,
        QuotaUse,
        Refused,
        ScheduleFired,
        ScheduleKnown,
        SchedulePauseSet,
        StartTimer,
        StepCompensation,
        StepFinished,
        StepSignalled,
        StepThrottled,
        StepWaiting,
        Subject,
        ThrottleEnded,
    )
    from workflow_manager.engine.engine import apply, replay
    from workflow_manager.engine.events import (
        BULK_ACTIONS,
        BulkProgressed,
        BulkRequested,
        BulkSlice,
        CancelRequested,
        Event,
        ForkSeed,
        JobArchived,
        JobRateStart,
        JobsHandedOver,
        JobsRecalled,
        JobSubmitted,
        PauseRequested,
        Quota,
        QuotasSet,
        RateHistory,
        RateStart,
        RecalledJob,
        RetryRequested,
        ReusedChild,
        SchedulePaused,
        ScheduleSeen,
        SignalReceived,
        StepReplied,
        TimerFired,
    )
    from workflow_manager.engine.failures import outcome_body
    from workflow_manager.engine.ids import canonical_uuid
    from workflow_manager.engine.state import (
        BulkRun,
        Compensation,
        CompensationRun,
        EngineState,
        ForkedFrom,
        Job,
        JobStatus,
        ParentLink,
        StepRun,
        StepStatus,
    )

__all__ = [
    "BULK_ACTIONS",
    "BulkProgress",
    "BulkProgressed",
    "BulkRequested",
    "BulkRun",
    "BulkSlice",
    "CancelRequested",
    "CancelTimer",
    "ForkSeed",
    "ForkedFrom",
    "ReusedChild",
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
    "JobsRecalled",
    "RateHistory",
    "RateStart",
    "JobRateStart",
    "JobsReleased",
    "RecalledJob",
    "JobCompensating",
    "JobDuplicate",
    "JobDebounced",
    "JobFinished",
    "JobPauseSet",
    "JobForked",
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
    "ScheduleKnown",
    "ScheduleSeen",
    "Quota",
    "QuotaUse",
    "QuotasSet",
    "QuotasUsed",
    "SignalReceived",
    "StartTimer",
    "StepCompensation",
    "StepFinished",
    "StepSignalled",
    "StepThrottled",
    "JobThrottled",
    "ThrottleEnded",
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


# The modules the names of `__all__` come from: those the imports above name.
_HOMES = ("commands", "engine", "events", "failures", "ids", "state")


def __getattr__(name: str) -> Any:
    """The engine's names load together on the first read of one (PEP 562): importing one
    module of the package (the command line reads `statuses` and `fanout`) runs no other."""
    # Not `lazymodules.names_on_first_use`, as the API's and the kits' packages use: the engine
    # imports nothing of the manager's, and a module list spares a home for each of 70 names.
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    homes = [vars(importlib.import_module(f"{__name__}.{home}")) for home in _HOMES]
    for each in __all__:
        globals()[each] = next(names[each] for names in homes if each in names)
    return globals()[name]
