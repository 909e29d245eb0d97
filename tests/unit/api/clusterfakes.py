"""Three managers on six partitions, as one of them (`ME`) sees them: the lease table, the
service (its jobs in memory, the journal's running jobs), and the other managers' APIs
played by an httpx mock transport."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import httpx

from workflow_manager.cluster.directory import Directory
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.cluster.view import Lease, Member
from workflow_manager.errors import JournalError
from workflow_manager.journal.history import JobListing

from .conftest import load_workflows

PARTITIONS = 6
ME, THERE, AWAY = "here:1", "there:2", "away:3"  # AWAY's API cannot be reached
URLS = {ME: "http://here:8080", THERE: "http://there:8080", AWAY: "http://away:8080"}


def ids_in(partition: int, how_many: int, tag: str) -> list[str]:
    """Made-up job ids (UUID-shaped) whose own partition is `partition`."""
    split, found, n = Partitioning("any", PARTITIONS), [], 0
    while len(found) < how_many:
        job_id = f"{tag:0>8}-0000-4000-8000-{n:012d}"
        if split.of(job_id) == partition:
            found.append(job_id)
        n += 1
    return found


@dataclass
class Table:
    """Partitions 0-1 are ME's, 2-3 THERE's, 4 AWAY's, 5 nobody's (being taken over)."""

    owners: dict[int, str | None] = field(
        default_factory=lambda: {0: ME, 1: ME, 2: THERE, 3: THERE, 4: AWAY, 5: None}
    )
    broken: bool = False

    async def leases(self) -> list[Lease]:
        if self.broken:
            raise JournalError("cannot reach the partition leases: connection refused")
        return [Lease(k, owner, 1, 2.0, 0.1) for k, owner in sorted(self.owners.items())]

    async def members(self) -> list[Member]:
        return [Member(name, url, 0.1) for name, url in URLS.items()]


@dataclass
class FakeJob:
    """What the list views read of a job in memory."""

    id: str
    workflow_name: str
    parent: str | None = None
    is_running: bool = True

    @property
    def workflow(self) -> Any:
        return type("W", (), {"name": self.workflow_name})


@dataclass
class State:
    jobs: dict[str, FakeJob] = field(default_factory=dict)


@dataclass
class History:
    """The journal's running top-level jobs, and where keyed ones were placed."""

    running: list[JobListing] = field(default_factory=list)
    placed: dict[str, int] = field(default_factory=dict)
    reads: int = 0

    async def running_jobs(self) -> list[JobListing]:
        self.reads += 1
        return list(self.running)

    async def placements(self, root_ids: Collection[str]) -> dict[str, int]:
        return {k: v for k, v in self.placed.items() if k in root_ids}


class Service:
    """What the routes read of a partitioned manager (`directory` None: unpartitioned)."""

    def __init__(self, table: Table) -> None:
        self.workflows = load_workflows()
        self.connected = True
        self.state = State()
        self.history = History()
        self.directory: Directory | None = Directory(table, ME, max_age_s=0.0)
        self.find: Callable[[str], Awaitable[Any]] | None = None  # find_job's behaviour
        self.found: list[str] = []

    async def find_job(self, job_id: str, *, replay_foreign: bool = False) -> Any:
        self.found.append(job_id)
        return None if self.find is None else await self.find(job_id)


Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


@dataclass
class Peers:
    """The other managers' APIs: `answers` by host, each a handler; AWAY is down."""

    answers: dict[str, Handler] = field(default_factory=dict)
    got: list[httpx.Request] = field(default_factory=list)

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.got.append(request)
        handler = self.answers.get(request.url.host)
        if handler is None:
            raise httpx.ConnectError("connection refused", request=request)
        return await handler(request)


def answering(status: int, body: Any) -> Handler:
    """A handler answering every request with `status` and the JSON `body`."""

    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body)

    return handle
