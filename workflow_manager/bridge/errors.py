"""The bridge's errors: start-up problems, and the failures it answers steps with.

ManagerError
└── BridgeConfigError       the workflow file's HTTP steps cannot be served (start-up)
pyworker.StepError          answered as an x-error reply; the manager retries as configured
└── HttpStepError
    ├── HttpStatusError     the endpoint answered with a status outside 2xx
    ├── HttpBodyError       a 2xx answer whose body is not a JSON object
    └── HttpTransportError  no answer: connection refused, reset, or past `http.timeout`
"""

from __future__ import annotations

from pyworker.errors import StepError
from workflow_manager.errors import ManagerError

__all__ = [
    "BridgeConfigError",
    "HttpStepError",
    "HttpStatusError",
    "HttpBodyError",
    "HttpTransportError",
]


class BridgeConfigError(ManagerError):
    """The HTTP steps of the workflow file cannot be served (no steps, a missing variable...)."""


class HttpStepError(StepError):
    """An HTTP step's call failed; the message names the method, URL and what came back."""


class HttpStatusError(HttpStepError):
    """The endpoint answered with a status outside 2xx."""


class HttpBodyError(HttpStepError):
    """The endpoint answered 2xx with a body that is not a JSON object."""


class HttpTransportError(HttpStepError):
    """No answer: the connection failed or the request ran past the step's `http.timeout`."""
