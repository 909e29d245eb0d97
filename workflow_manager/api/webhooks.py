"""`POST /hooks/{name}`: a signed request from a webhook source starts the workflows it triggers.

The signature is the request's credential (workflow_manager.webhooks): the route needs no API
token, and the browser guards (Origin, JSON content type) do not apply to it
(workflow_manager.api.origin.SIGNED_PREFIXES). The body and URL limits do. Each job goes
through `JobService.submit`, the HTTP submit route's way in, so admission, unique keys, limits
and the journal apply unchanged; its id is derived from the delivery, so a redelivery meets the
duplicate-id check and is answered with the same jobs.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from workflow_manager.api.forwarding import FORWARDED_BY, RETRY_AFTER_S, Forwarder, NotForwarded
from workflow_manager.api.inputs import parse_payload
from workflow_manager.api.models import ErrorBody
from workflow_manager.api.routes import Now, Service
from workflow_manager.config.checks import suggest
from workflow_manager.errors import Debounced, DuplicateJob, NotOwner, SubmitError
from workflow_manager.webhooks import Match, Refused, Source, matching_jobs, verify

__all__ = ["Webhooks", "router", "OUTCOMES"]

log = logging.getLogger(__name__)

OUTCOMES = (
    "accepted", "duplicate", "debounced", "no_match", "refused", "bad_signature", "stale",
    "invalid_body", "unavailable",
)  # fmt: skip
"""The `outcome` label of workflow_manager_webhook_requests_total."""


def _not_counted(webhook: str, outcome: str) -> None:
    """No metrics (an app made without them)."""


@dataclass(frozen=True)
class Webhooks:
    """The webhook sources served, by name, and where each request's outcome is counted."""

    sources: Mapping[str, Source] = field(default_factory=dict)
    count: Callable[[str, str], None] = _not_counted

    def __repr__(self) -> str:
        return f"<Webhooks {', '.join(self.sources) or 'none'}>"


class WebhookJob(BaseModel):
    """A job the request started (or, `duplicate`, had started already: a redelivery)."""

    id: str = Field(examples=["3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"])
    workflow: str
    duplicate: bool = Field(description="True when this delivery had started the job before.")
    debounced: bool = Field(
        default=False,
        description="True when the workflow's debounce window was open: this job, started by "
        "an earlier trigger of the same key, does the work.",
    )


class WebhookRefusal(BaseModel):
    """A workflow the request matched whose job could not start, and why."""

    workflow: str
    error: str


class WebhookJobs(BaseModel):
    """The jobs a webhook request started: one per workflow it triggers (none: no match)."""

    jobs: list[WebhookJob]
    refused: list[WebhookRefusal] = Field(
        description="Matched workflows whose job was refused (its payload, its unique key...)."
    )


router = APIRouter()


class OwnerUnavailable(Exception):
    """A matched job's partition is another manager's, which cannot be asked now."""


# On a request forwarded by another manager: the one workflow whose job to start here.
_ONLY = "workflow"

HookName = Annotated[str, Path(description="The webhook source's name (`webhooks:` entry).")]
_ANSWERS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "A stale timestamp, or a body not a JSON object."},
    401: {"model": ErrorBody, "description": "A missing or wrong signature."},
    404: {"model": ErrorBody, "description": "No webhook of that name."},
    503: {"model": ErrorBody, "description": "Not connected to RabbitMQ: send it again later."},
}


@router.post("/hooks/{name}", tags=["webhooks"], response_model=WebhookJobs, responses=_ANSWERS)
async def webhook(name: HookName, request: Request, service: Service, now: Now) -> JSONResponse:
    """A signed request from webhook source `name`: one job per workflow whose trigger on it
    matches the JSON body. No API token: the signature (per the source's scheme) is checked
    instead. A redelivery (same delivery id) answers the jobs it started the first time."""
    hooks: Webhooks = request.app.state.webhooks
    if FORWARDED_BY in request.headers:
        # Sent on by the manager that received it, which counts it: not counted twice.
        hooks = dataclasses.replace(hooks, count=_not_counted)
    source = hooks.sources.get(name)
    if source is None:
        known = ", ".join(hooks.sources) or "none declared"
        message = f"no webhook {name!r} (known: {known}){suggest(name, hooks.sources)}"
        raise HTTPException(status_code=404, detail=message)
    body = await request.body()
    verdict = verify(source, request.headers, body, now())
    if isinstance(verdict, Refused):
        return _refused(hooks, name, verdict.status, verdict.outcome, verdict.reason)
    try:
        document = parse_payload(body, "the webhook's body", request.app.state.max_json_depth)
    except HTTPException as exc:
        return _refused(hooks, name, 400, "invalid_body", str(exc.detail))
    if not service.connected:
        reason = "not connected to RabbitMQ, so no job can start now; send it again shortly"
        return _refused(hooks, name, 503, "unavailable", reason)
    matches = matching_jobs(name, verdict.delivery, document, service.workflows.values())
    if FORWARDED_BY in request.headers and (only := request.query_params.get(_ONLY)):
        # Another manager sent us the match whose job is in our partition: that one alone.
        matches = [match for match in matches if match.workflow == only]
    try:
        results = [await _start(request, service, match) for match in matches]  # in turn
    except OwnerUnavailable as exc:
        return _refused(
            hooks, name, 503, "unavailable", str(exc), {"Retry-After": str(RETRY_AFTER_S)}
        )
    jobs = [result for result in results if isinstance(result, WebhookJob)]
    refused = [result for result in results if isinstance(result, WebhookRefusal)]
    outcome = _outcome(jobs, refused)
    hooks.count(name, outcome)
    log.info(
        "webhook %s: delivery %r %s: %d job(s) %s", name, verdict.delivery, outcome, len(jobs),
        " ".join(f"{job.workflow}={job.id}" for job in jobs),
    )  # fmt: skip
    for refusal in refused:
        log.info("webhook %s: %s refused: %s", name, refusal.workflow, refusal.error)
    answer = WebhookJobs(jobs=jobs, refused=refused)
    return JSONResponse(answer.model_dump())


async def _start(request: Request, service: Service, match: Match) -> WebhookJob | WebhookRefusal:
    """Submit the match's job (the API's way in); a duplicate id is the same delivery again.
    A job of a partition another manager runs is started there (`_at_owner`)."""
    if match.error is not None:
        return WebhookRefusal(workflow=match.workflow, error=match.error)
    try:
        job_id = await service.submit(match.workflow, match.payload, match.job_id)
    except NotOwner as exc:
        return await _at_owner(request, exc, match)
    except DuplicateJob:
        return WebhookJob(id=match.job_id, workflow=match.workflow, duplicate=True)
    except Debounced as exc:
        return WebhookJob(id=exc.job_id, workflow=match.workflow, duplicate=False, debounced=True)
    except SubmitError as exc:
        return WebhookRefusal(workflow=match.workflow, error=str(exc))
    return WebhookJob(id=job_id, workflow=match.workflow, duplicate=False)


async def _at_owner(request: Request, exc: NotOwner, match: Match) -> WebhookJob | WebhookRefusal:
    """The match's job started by the manager running its partition: the same signed request
    sent on (it checks it again), limited to this match's workflow; its entry of the answer.
    When that manager cannot be asked the whole request is answered 503, so the sender sends
    it again (a redelivery starts nothing twice)."""
    forwarder: Forwarder = request.app.state.forwarder
    query = urlencode({_ONLY: match.workflow})
    try:
        answer = await forwarder.forward(request, exc, request.app.state.service.directory, query)
    except NotForwarded as why:
        raise OwnerUnavailable(
            f"the job of workflow '{match.workflow}' is {exc}, and {why}; send it again"
        ) from why
    if answer.status_code != 200:
        said = bytes(answer.body)[:300].decode(errors="replace")
        raise OwnerUnavailable(
            f"the job of workflow '{match.workflow}' is {exc}, and that manager answered "
            f"{answer.status_code} ({said}); send it again"
        )
    there = WebhookJobs.model_validate_json(bytes(answer.body))
    for job in there.jobs:
        if job.workflow == match.workflow:
            return job
    for refusal in there.refused:
        if refusal.workflow == match.workflow:
            return refusal
    error = "its manager found no match for this workflow (a different configuration?)"
    return WebhookRefusal(workflow=match.workflow, error=error)


def _outcome(jobs: list[WebhookJob], refused: list[WebhookRefusal]) -> str:
    if any(not (job.duplicate or job.debounced) for job in jobs):
        return "accepted"
    if any(job.debounced for job in jobs):
        return "debounced"
    if jobs:
        return "duplicate"
    return "refused" if refused else "no_match"


def _refused(
    hooks: Webhooks,
    name: str,
    status: int,
    outcome: str,
    reason: str,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """Count and log a refused request (the reason names no secret, no signature)."""
    hooks.count(name, outcome)
    log.info("webhook %s: request refused (%s, %d): %s", name, outcome, status, reason)
    return JSONResponse({"error": reason}, status_code=status, headers=headers)
