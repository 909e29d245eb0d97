"""The HTTP API: `create_app(service)` builds the FastAPI app over the orchestrator.

Its names are imported on first use: a module of the package that needs no FastAPI (the API
token, read by the command line) is imported without it, so a manager loads FastAPI only once
it consumes (`workflow_manager.api.serving`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_manager.lazymodules import names_on_first_use

if TYPE_CHECKING:
    from workflow_manager.api.app import create_app
    from workflow_manager.api.service import Clock, JobService
    from workflow_manager.api.token import ApiToken

__all__ = ["ApiToken", "Clock", "JobService", "create_app"]

__getattr__ = names_on_first_use(
    __name__,
    {
        "ApiToken": "workflow_manager.api.token",
        "Clock": "workflow_manager.api.service",
        "JobService": "workflow_manager.api.service",
        "create_app": "workflow_manager.api.app",
    },
)
