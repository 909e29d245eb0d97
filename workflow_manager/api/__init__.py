"""The HTTP API: `create_app(service)` builds the FastAPI app over the orchestrator.

Its names are imported on first use: a module of the package that needs no FastAPI (the API
token, read by the command line) is imported without it, so a manager loads FastAPI only once
it consumes (`workflow_manager.api.serving`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workflow_manager.api.app import create_app
    from workflow_manager.api.service import Clock, JobService
    from workflow_manager.api.token import ApiToken

__all__ = ["ApiToken", "Clock", "JobService", "create_app"]

_HOMES = {
    "ApiToken": "workflow_manager.api.token",
    "Clock": "workflow_manager.api.service",
    "JobService": "workflow_manager.api.service",
    "create_app": "workflow_manager.api.app",
}


def __getattr__(name: str) -> Any:
    """One of `__all__`, from the module that defines it (imported now, once)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next read finds it without asking again
    return value
