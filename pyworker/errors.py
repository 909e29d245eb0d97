"""The errors pyworker raises, one tree under `PyworkerError`.

    PyworkerError               anything pyworker reports to a user
    ├── StepDefinitionError     a step handler or its registration is invalid (raised at decoration)
    ├── SettingsError           a worker setting is invalid (URL, prefetch, environment variable)
    ├── WorkerStateError        a lifecycle call made in the wrong state (e.g. start twice)
    ├── BrokerError             RabbitMQ cannot be reached or refused an operation
    ├── TargetError             the CLI's MODULE:OBJECT cannot be loaded
    ├── ProtocolError           a request or result breaks the wire protocol (answered with x-error)
    │   ├── InvalidRequest      the request body is not a JSON object
    │   └── InvalidResult       a handler returned something that is not a JSON object
    └── StepError               a step failed, and the message says all (logged without traceback)
        ├── CommandFailed       the exec worker's command exited non-zero (or could not start)
        ├── CommandTimeout      the exec worker's command ran past --timeout and was killed
        └── PayloadRefError     a payload reference cannot be read (or a value cannot be stored)

Every message names the thing, shows the bad value and, where there is one, suggests the fix.
"""

from __future__ import annotations

from payload_refs import errors as shared

__all__ = [
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
]


class PyworkerError(Exception):
    """Root of every error pyworker reports to a user."""


class StepDefinitionError(PyworkerError):
    """A step handler or its registration is invalid."""


class SettingsError(PyworkerError):
    """A worker setting (URL, prefetch, environment variable) is invalid."""


class WorkerStateError(PyworkerError):
    """A lifecycle method was called in a state that does not allow it."""


class BrokerError(PyworkerError):
    """RabbitMQ cannot be reached or refused an operation."""


class TargetError(PyworkerError):
    """The CLI's `MODULE:OBJECT` target cannot be loaded or is not a Worker."""


class ProtocolError(PyworkerError):
    """A request or a handler's result breaks the wire protocol; answered with an x-error reply."""


class InvalidRequest(ProtocolError):
    """The request body is not a JSON object."""


class InvalidResult(ProtocolError):
    """A handler returned something other than a JSON object (or None)."""


class StepError(PyworkerError):
    """A step failed for a reason its message fully explains; replied as x-error, no traceback."""


class CommandFailed(StepError):
    """The exec worker's command exited with a non-zero status (or could not be started)."""


class CommandTimeout(StepError):
    """The exec worker's command ran longer than its timeout and was killed."""


class PayloadRefError(StepError, shared.PayloadRefError):
    """A payload reference cannot be resolved, or a value cannot be stored: its message names
    the reference (`wm://<store>/<key>`) or the store, and why (the stores' own error, in
    pyworker's tree)."""
