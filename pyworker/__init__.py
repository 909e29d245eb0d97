"""pyworker: write workflow-manager step workers in Python.

from pyworker import Worker, StepContext

worker = Worker()

@worker.step("segment-word-counts")
async def count(data: dict, ctx: StepContext) -> dict:
    ...

worker.run()  # or: pyworker module.py:worker
"""

from pyworker.context import StepContext
from pyworker.errors import (
    BrokerError,
    CommandFailed,
    CommandTimeout,
    InvalidRequest,
    InvalidResult,
    PayloadRefError,
    ProtocolError,
    PyworkerError,
    SettingsError,
    StepDefinitionError,
    StepError,
    TargetError,
    WorkerStateError,
)
from pyworker.settings import WorkerSettings
from pyworker.worker import Worker

__version__ = "0.1.0"

__all__ = [
    "Worker",
    "StepContext",
    "WorkerSettings",
    "PyworkerError",
    "StepDefinitionError",
    "SettingsError",
    "WorkerStateError",
    "BrokerError",
    "TargetError",
    "ProtocolError",
    "InvalidRequest",
    "InvalidResult",
    "StepError",
    "CommandFailed",
    "CommandTimeout",
    "PayloadRefError",
    "__version__",
]
