"""Bulk actions across several managers (`--partitions`): `POST /api/jobs/bulk` on any one.

The manager asked evaluates the filter once: over the jobs in its own memory and the journal's
ended jobs, and over the jobs in each other manager's memory (each asked, `POST
/api/bulk/matches` with the filter, for its own matches and the partitions it answers for). A
partition no manager answered for (being taken over) makes the request a 503: the set of jobs
would be incomplete. The jobs matched are split by partition
(`workflow_manager.cluster.bulkparts`); each partition's part is journaled as a bulk of its own
by the manager running that partition (`POST /api/bulk/parts`, or directly for the partitions
of the manager asked), which carries it out; a take-over of the partition replays it from the
journal and goes on. `GET /api/bulk/{id}` on any manager sums the
parts the journal has (`BulkRequests.bulk_status`).

The two routes here are between managers (left out of the OpenAPI document); each takes the
caller's credentials, passed on as forwarding does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workflow_manager.api.bulkfilter import BulkFilter
from workflow_manager.api.errors import validation_message
from workflow_manager.api.forwarding import FORWARDED_BY, Forwarder
from workflow_manager.api.inputs import parse_payload
from workflow_manager.api.service import JobService
from workflow_manager.bulkactions import MAX_BULK_JOBS, JobFilter
from workflow_manager.cluster.bulkparts import MatchedJob, oldest_first, part_id, split
from workflow_manager.cluster.directory import Directory, Peer
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.errors import JobConflict, JournalError, NotOwner
from workflow_manager.lazymodules import lazy_module

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy_module("httpx")  # loaded when a peer is first asked

__all__ = ["router", "bulk_across", "Unanswered"]

log = logging.getLogger(__name__)

router = APIRouter()

MATCHES_PATH = "/api/bulk/matches"
PARTS_PATH = "/api/bulk/parts"
# How long the manager asked keeps trying while a partition has no owner it can reach (a
# take-over: a lease lives 3 s, then waits up to a renewal to be taken).
_PATIENCE_S = 10.0
_AGAIN_S = 0.5  # between two tries
_PASSED_ON = ("authorization", "cookie", "traceparent", "tracestate")


class Unanswered(Exception):
    """A partition's jobs could not be asked about, or its part not handed to its owner."""


class _Part(BaseModel):
    """`POST /api/bulk/parts`: one partition's part of a bulk, to journal and carry out."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The part's id (`workflow_manager.cluster.bulkparts.part_id`).")
    partition: int = Field(ge=0)
    action: Literal["cancel", "retry", "pause", "resume", "fork"]
    jobs: list[str] = Field(max_length=MAX_BULK_JOBS)  # as a bulk's own limit
    params: dict[str, Any] | None = None
    filter: dict[str, Any] | None = None


async def bulk_across(
    request: Request,
    service: JobService,
    action: str,
    criteria: JobFilter,
    filter_json: dict[str, Any],
    params: dict[str, Any] | None,
    *,
    dry_run: bool,
) -> tuple[str | None, list[str]]:
    """A bulk action over every manager's jobs (see the module's docstring): its id (None for
    a `dry_run`) and the ids matched, oldest first. `filter_json` is the filter as the
    request gave it (the other managers are asked with it). JobConflict past MAX_BULK_JOBS;
    Unanswered when a partition's jobs cannot be asked about, or a part cannot be handed to
    its partition's owner in time."""
    directory = service.directory
    assert directory is not None
    matched = oldest_first(await _matches(request, service, directory, criteria, filter_json))
    if len(matched) > MAX_BULK_JOBS:
        raise JobConflict(
            f"the filter matches more than {MAX_BULK_JOBS:,} jobs; narrow it (by workflow, "
            "status, time or id prefix) and act in several bulks"
        )
    ordered = [job.id for job in matched]
    if dry_run:
        return None, ordered
    bulk_id = str(uuid.uuid4())
    parts = split(matched)
    if not parts:  # nothing matched: one empty part records the bulk (finished at once)
        parts = {await _home(directory): ()}
    shown = criteria.as_json()
    journaled: list[int] = []
    try:
        for partition, ids in parts.items():
            part = {"action": action, "jobs": list(ids), "params": params, "filter": shown}
            await _hand(request, service, directory, bulk_id, partition, part)
            journaled.append(partition)
    except Unanswered as why:
        done = f"; the parts of partitions {journaled} are journaled and go on" if journaled else ""
        raise Unanswered(f"bulk action {bulk_id}: {why}{done}") from None
    log.info("bulk %s: %s %d jobs in %d partitions", bulk_id, action, len(ordered), len(parts))
    return bulk_id, ordered


async def _matches(
    request: Request,
    service: JobService,
    directory: Directory,
    criteria: JobFilter,
    filter_json: dict[str, Any],
) -> list[MatchedJob]:
    """Every job the filter matches now: the journal's ended ones and those in each manager's
    memory, each partition answered for by the manager running it (asked again, within
    `_PATIENCE_S`, while some partition is being taken over)."""
    give_up_at = time.monotonic() + _PATIENCE_S
    body = json.dumps(filter_json).encode()  # `BulkFilter`'s
    while True:
        own, covered_list = await service.bulk_matches(criteria, ended=True)
        found, covered = list(own), set(covered_list)
        try:
            count = await directory.partitions()
            peers = _peers(await directory.owners(), directory.this_manager)
        except JournalError as err:
            raise Unanswered(f"the cluster's managers cannot be read ({err})") from err
        answers = await asyncio.gather(
            *(_ask_matches(request, peer, directory, body) for peer in peers)
        )
        for answer in answers:
            if answer is not None:
                jobs, partitions = answer
                found.extend(jobs)
                covered.update(partitions)
        missing = sorted(set(range(count)) - covered)
        if not missing:
            return found
        if time.monotonic() >= give_up_at:
            raise Unanswered(f"no manager answered for the jobs of partitions {missing}")
        directory.forget()  # their owners may have changed: read them again
        await asyncio.sleep(_AGAIN_S)


def _peers(owners: dict[int, Peer], me: str) -> list[Peer]:
    """The other managers holding partitions, by name."""
    return sorted({p.name: p for p in owners.values() if p.name != me}.values(), key=_name)


def _name(peer: Peer) -> str:
    return peer.name


async def _ask_matches(
    request: Request, peer: Peer, directory: Directory, body: bytes
) -> tuple[list[MatchedJob], list[int]] | None:
    """`peer`'s matches in its memory and the partitions it answers for; None (logged) when
    it cannot be asked (its partitions then count as unanswered)."""
    try:
        answer = await _post(request, peer, directory, MATCHES_PATH, body)
        if answer.status_code != 200:
            raise ValueError(f"it answered {answer.status_code}: {answer.text[:200]}")
        given = answer.json()
        jobs = [MatchedJob(str(i), int(p), float(at)) for i, p, at in given["jobs"]]
        return jobs, [int(p) for p in given["partitions"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as why:
        log.info("bulk: %s not asked for its matches (%s)", peer.name, why)
        return None


async def _home(directory: Directory) -> int:
    """Where an empty bulk is recorded: a partition this manager runs, else partition 0."""
    try:
        owners = await directory.owners()
    except JournalError as err:
        raise Unanswered(f"the cluster's managers cannot be read ({err})") from err
    ours = [k for k, peer in owners.items() if peer.name == directory.this_manager]
    return min(ours) if ours else 0


async def _hand(
    request: Request,
    service: JobService,
    directory: Directory,
    bulk_id: str,
    partition: int,
    part: dict[str, Any],
) -> None:
    """Have `partition`'s part of bulk `bulk_id` journaled and carried out by the manager
    running that partition: here when it is this one, else asked (again, within
    `_PATIENCE_S`, while the partition has no owner that can be reached)."""
    try:
        count = await directory.partitions()
    except JournalError as err:
        raise Unanswered(f"the cluster's managers cannot be read ({err})") from err
    pid = part_id(bulk_id, partition, Partitioning(queue="", count=count))
    give_up_at = time.monotonic() + _PATIENCE_S
    body = json.dumps({"id": pid, "partition": partition, **part}).encode()
    while True:
        why = await _try_hand(request, service, directory, pid, partition, part, body)
        if why is None:
            return
        if time.monotonic() >= give_up_at:
            raise Unanswered(f"partition {partition}'s part was not taken: {why}")
        directory.forget()
        await asyncio.sleep(_AGAIN_S)


async def _try_hand(
    request: Request,
    service: JobService,
    directory: Directory,
    pid: str,
    partition: int,
    part: dict[str, Any],
    body: bytes,
) -> str | None:
    """One try of `_hand`: None when the part is journaled (now or before), else why not."""
    try:
        owner = await directory.owner_of(partition)
    except JournalError as err:
        return f"its owner cannot be looked up ({err})"
    if owner is None:
        return "no manager holds it now (it is being taken over)"
    if owner.name == directory.this_manager:
        try:
            await service.bulk_part(
                pid, partition, part["action"], tuple(part["jobs"]), part["params"],
                part["filter"],
            )  # fmt: skip
            return None
        except NotOwner as exc:
            return str(exc)
    try:
        answer = await _post(request, owner, directory, PARTS_PATH, body)
    except httpx.HTTPError as err:
        return f"its owner {owner.name} cannot be reached ({type(err).__name__})"
    if answer.status_code == 200:
        return None
    if answer.status_code == 503:
        return f"its owner {owner.name} answered 503"
    raise JobConflict(f"partition {partition}'s owner refused its part: {answer.text[:300]}")


async def _post(
    request: Request, to: Peer, directory: Directory, path: str, body: bytes
) -> httpx.Response:
    """POST `body` to `path` of `to`'s API, with the caller's credentials, marked forwarded."""
    if to.api_url is None:
        raise httpx.InvalidURL(f"{to.name} advertises no API URL (--advertise-url)")
    headers = {k: v for k, v in request.headers.items() if k in _PASSED_ON}
    headers["content-type"] = "application/json"
    headers[FORWARDED_BY] = directory.this_manager
    forwarder: Forwarder = request.app.state.forwarder
    try:
        return await forwarder.client().post(to.api_url + path, content=body, headers=headers)
    except httpx.HTTPError:
        directory.forget()  # it may have moved: look again next time
        raise


def _partitioned(service: JobService) -> None:
    if service.directory is None:
        raise HTTPException(status_code=404, detail="not a partitioned manager")


def _parsed(model: type[BaseModel], raw: bytes, max_depth: int) -> Any:
    body = parse_payload(raw, "the request", max_depth)
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        raise HTTPException(status_code=400, detail=validation_message(errors)) from None


@router.post(MATCHES_PATH, include_in_schema=False)
async def bulk_matches(request: Request) -> JSONResponse:
    """Between managers: the jobs in this manager's memory a bulk's filter matches, and the
    partitions it answers for."""
    service: JobService = request.app.state.service
    _partitioned(service)
    asked = _parsed(BulkFilter, await request.body(), request.app.state.max_json_depth)
    jobs, partitions = await service.bulk_matches(asked.criteria(), ended=False)
    found = [[job.id, job.partition, job.submitted_at] for job in jobs]
    return JSONResponse({"jobs": found, "partitions": partitions})


@router.post(PARTS_PATH, include_in_schema=False)
async def bulk_part(request: Request) -> JSONResponse:
    """Between managers: journal one partition's part of a bulk and carry it out (503 when
    this manager does not run that partition: the asker tries its owner again)."""
    service: JobService = request.app.state.service
    _partitioned(service)
    part = _parsed(_Part, await request.body(), request.app.state.max_json_depth)
    made = await service.bulk_part(
        part.id, part.partition, part.action, tuple(part.jobs), part.params, part.filter
    )
    return JSONResponse({"id": part.id, "journaled": made})
