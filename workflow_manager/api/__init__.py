"""The HTTP API: `create_app(service)` builds the FastAPI app over the orchestrator."""

from workflow_manager.api.access import ApiToken
from workflow_manager.api.app import create_app
from workflow_manager.api.service import Clock, JobService

__all__ = ["ApiToken", "Clock", "JobService", "create_app"]
