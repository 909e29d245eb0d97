"""Reads of the whole cluster: `GET /api/jobs` and `GET /api/workflows` on a partitioned
manager answer for every manager's jobs, so a load balancer may send them anywhere.

Each manager knows the jobs it runs (in memory, child jobs too). The manager asked adds to
its own answer the answer of each other manager holding partitions, asked the same request
with `x-wm-forwarded-by` (so it answers for itself and asks no one). For the partitions of a
manager that cannot be asked, and those no manager holds (being taken over), the journal's
running top-level jobs of those partitions stand in: their child jobs are then missing.
Answers are merged in the order of the managers' names, so every manager gives the same one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi import Request

from workflow_manager.api.forwarding import FORWARDED_BY, Forwarder, NotForwarded
from workflow_manager.api.service import JobService
from workflow_manager.cluster.directory import Directory, Peer
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.errors import JournalError
from workflow_manager.journal.history import JobListing

__all__ = ["Gathered", "gather", "merged_job_ids", "merged_summaries"]

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Gathered(Generic[T]):
    """Every manager's own answer (this one's included) in the order of their names, and the
    journal's running top-level jobs of the partitions none of them answered for."""

    answers: list[T]
    journal: list[JobListing]


async def gather(
    request: Request, service: JobService, own: T, parse: Callable[[bytes], T]
) -> Gathered[T]:
    """`own` (this manager's answer to `request`) with the other managers' answers, read by
    `parse` (ValueError: not an answer); only `own` when unpartitioned or asked by a manager."""
    directory = service.directory
    if directory is None or FORWARDED_BY in request.headers:
        return Gathered([own], [])
    try:
        owners, count = await directory.owners(), await directory.partitions()
    except JournalError as err:
        log.warning("%s answered for this manager alone: %s", request.url.path, err)
        return Gathered([own], [])
    me = directory.this_manager
    peers = sorted({p.name: p for p in owners.values() if p.name != me}.values(), key=_name)
    forwarder: Forwarder = request.app.state.forwarder
    asked = await asyncio.gather(*(_ask(forwarder, request, p, directory, parse) for p in peers))
    answered: dict[str, T] = {p.name: a for p, a in zip(peers, asked, strict=True) if a is not None}
    answered[me] = own
    unanswered = {k for k in range(count) if k not in owners or owners[k].name not in answered}
    journal = await _running_in(service, unanswered, count) if unanswered else []
    return Gathered([answered[name] for name in sorted(answered)], journal)


def _name(peer: Peer) -> str:
    return peer.name


async def _ask(
    forwarder: Forwarder,
    request: Request,
    peer: Peer,
    directory: Directory,
    parse: Callable[[bytes], T],
) -> T | None:
    """`peer`'s own answer to `request`, or None (logged) when it gives none."""
    try:
        answer = await forwarder.ask(request, peer, directory)
        if answer.status_code != 200:
            raise NotForwarded(f"it answered {answer.status_code}")
        return parse(bytes(answer.body))
    except (NotForwarded, ValueError) as why:
        log.info(
            "%s %s: %s not asked (%s); its partitions are read from the journal",
            request.method, request.url.path, peer.name, why,
        )  # fmt: skip
        return None


async def _running_in(service: JobService, partitions: set[int], count: int) -> list[JobListing]:
    """The journal's running top-level jobs of `partitions` (of `count`), oldest first."""
    try:
        rows = await service.history.running_jobs()
        placed = await service.history.placements([row.id for row in rows])
    except JournalError as err:
        log.warning("running jobs of partitions %s not read: %s", sorted(partitions), err)
        return []
    split = Partitioning(queue="", count=count)  # only `of` is used: no queue is named
    return [row for row in rows if split.of(row.id, placed.get(row.id)) in partitions]


def merged_job_ids(answers: Iterable[list[str]], journal: Iterable[JobListing]) -> list[str]:
    """Every id of `answers`, then of `journal`, once each, in that order."""
    ids = [job_id for answer in answers for job_id in answer]
    ids.extend(row.id for row in journal)
    return list(dict.fromkeys(ids))


def merged_summaries(
    answers: list[list[dict[str, Any]]], journal: Iterable[JobListing]
) -> list[dict[str, Any]]:
    """One entry per workflow (and vhost) of any answer, in the order they first come, its
    `job_count` summed over every answer and the journal's running jobs of that workflow."""
    counts: Counter[tuple[str, str]] = Counter()
    for answer in answers:
        counts.update({(entry["vhost"], entry["name"]): entry["job_count"] for entry in answer})
    by_workflow = Counter(row.workflow for row in journal)
    entries = {(e["vhost"], e["name"]): e for answer in answers for e in answer}
    return [
        {**entry, "job_count": counts[key] + by_workflow[entry["name"]]}
        for key, entry in entries.items()
    ]
