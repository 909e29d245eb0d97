"""The HTTP API: `create_app(service)` builds the FastAPI app over the orchestrator."""

from manager.api.access import ApiToken
from manager.api.app import create_app
from manager.api.service import Clock, JobService

__all__ = ["ApiToken", "Clock", "JobService", "create_app"]
