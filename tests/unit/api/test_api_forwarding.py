"""A request about a job another manager runs is answered by that manager: the API's routes
over a service that raises NotOwner, the owner played by an httpx mock transport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from workflow_manager.api import create_app
from workflow_manager.api.forwarding import ANSWERED_BY, FORWARDED_BY, Forwarder
from workflow_manager.cluster.directory import Directory, Peer
from workflow_manager.cluster.view import Lease, Member
from workflow_manager.errors import JournalError, NotOwner

from .conftest import load_workflows

JOB = "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10"
ME, OWNER = "here:1", "there:2"
OWNER_URL = "http://there:8080"


@dataclass
class Table:
    """The lease table: partition 3 held by OWNER unless a test changes it; counts reads."""

    owner: str | None = OWNER
    expires_in_s: float = 2.5
    members_: list[Member] = field(default_factory=lambda: [Member(ME, "http://here:8080", 0.1)])
    reads: int = 0
    broken: bool = False

    async def leases(self) -> list[Lease]:
        self.reads += 1
        if self.broken:
            raise JournalError("cannot reach the partition leases: connection refused")
        return [Lease(3, self.owner, 4, self.expires_in_s, 0.2), Lease(5, ME, 1, 2.0, 0.1)]

    async def members(self) -> list[Member]:
        return [*self.members_, Member(OWNER, OWNER_URL, 0.1)]


class Service:
    """What the routes ask, each request about job JOB raising NotOwner (partition 3)."""

    def __init__(self, table: Table) -> None:
        self.workflows = load_workflows()
        self.connected = True
        self.directory: Directory | None = Directory(table, ME)
        self.replayed: list[str] = []  # jobs read from the journal, their owner not asked

    unknown = False  # the job is nowhere in the journal: of no known partition

    def _foreign(self) -> NotOwner:
        if self.unknown:
            return NotOwner(f"no job {JOB}", None)
        return NotOwner(f"job {JOB} is in partition 3, which another manager runs", 3)

    async def find_job(self, job_id: str, *, replay_foreign: bool = False) -> Any:
        if replay_foreign:
            self.replayed.append(job_id)
            return None  # as if its rows were pruned meanwhile: a 404
        raise self._foreign()

    async def cancel(self, job_id: str) -> Any:
        raise self._foreign()

    async def retry(self, job_id: str) -> Any:
        raise self._foreign()

    async def signal(self, job_id: str, step: str, payload: dict[str, Any]) -> str:
        raise self._foreign()

    async def submit(self, *args: Any, **kwargs: Any) -> str:
        raise self._foreign()


@dataclass
class Owner:
    """The owner's API: answers every request with `status` and `body`, keeps what it got."""

    status: int = 200
    body: Any = field(default_factory=lambda: {"id": JOB, "status": "running"})
    got: list[httpx.Request] = field(default_factory=list)
    down: bool = False

    knows: set[str] = field(default_factory=lambda: {"there"})  # hosts that know the job

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("connection refused", request=request)
        self.got.append(request)
        if request.url.host not in self.knows:
            return httpx.Response(404, json={"error": f"no job {JOB}"})
        return httpx.Response(self.status, json=self.body, headers={"Retry-After": "7"})


@pytest.fixture
def table() -> Table:
    return Table()


@pytest.fixture
def owner() -> Owner:
    return Owner()


@pytest.fixture
def service(table: Table) -> Service:
    return Service(table)


@pytest.fixture
async def client(service: Service, owner: Owner) -> AsyncIterator[httpx.AsyncClient]:
    forwarder = Forwarder(httpx.MockTransport(owner))
    app = create_app(service, forwarder=forwarder)  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://here:8080") as http:
        yield http
    await forwarder.close()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", f"/api/job/{JOB}", None),
        ("GET", f"/api/job/{JOB}/steps", None),
        ("DELETE", f"/api/job/{JOB}", None),
        ("POST", f"/api/job/{JOB}/retry", None),
        ("POST", f"/api/job/{JOB}/signal/approve", {"approved": True}),
        ("POST", f"/api/workflow/wordcount?id={JOB}&priority=3", {"text": "a b"}),
    ],
)
async def test_a_request_about_a_foreign_job_is_answered_by_its_owner(
    client: httpx.AsyncClient, owner: Owner, method: str, path: str, body: Any
) -> None:
    owner.status, owner.body = 409, {"error": "job is already completed"}
    headers = {
        "Authorization": "Bearer s3cret",
        "Cookie": "wm_token=s3cret",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "x-meta": '{"tenant": "t1"}',
        "x-unrelated": "not passed on",
    }
    content = None if body is None else json.dumps(body).encode()
    if method != "GET":
        headers["Content-Type"] = "application/json"
    response = await client.request(method, path, content=content, headers=headers)
    assert (response.status_code, response.json()) == (409, owner.body)
    assert response.headers["retry-after"] == "7"
    assert response.headers[ANSWERED_BY] == OWNER
    [sent] = owner.got
    assert (sent.method, str(sent.url)) == (method, OWNER_URL + path)
    assert sent.content == (content or b"")
    assert sent.headers[FORWARDED_BY] == ME
    for name in headers.keys() - {"x-unrelated"}:
        assert sent.headers[name] == headers[name]
    assert "x-unrelated" not in sent.headers


async def test_a_request_forwarded_once_is_never_forwarded_again(
    client: httpx.AsyncClient, owner: Owner
) -> None:
    response = await client.delete(f"/api/job/{JOB}", headers={FORWARDED_BY: "elsewhere:9"})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert "partition 3" in response.json()["error"]
    assert "elsewhere:9 forwarded this request here" in response.json()["error"]
    assert owner.got == []


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"owner": None}, "no manager holds it now"),
        ({"expires_in_s": -0.5}, "no manager holds it now"),
        ({"owner": ME}, "this manager is handing it over"),
        ({"broken": True}, "its owner cannot be looked up (cannot reach the partition leases"),
    ],
)
async def test_without_a_live_owner_to_ask_the_answer_is_503_naming_the_partition(
    client: httpx.AsyncClient, table: Table, owner: Owner, change: dict[str, Any], said: str
) -> None:
    for name, value in change.items():
        setattr(table, name, value)
    response = await client.post(f"/api/job/{JOB}/retry")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    error = response.json()["error"]
    assert error.startswith(f"job {JOB} is in partition 3, which another manager runs, and ")
    assert said in error
    assert owner.got == []


async def test_an_owner_without_an_api_url_is_named(
    client: httpx.AsyncClient, table: Table
) -> None:
    table.owner = "quiet:3"
    table.members_.append(Member("quiet:3", None, 0.1))
    response = await client.delete(f"/api/job/{JOB}")
    assert response.status_code == 503
    assert "its owner quiet:3 advertises no API URL" in response.json()["error"]


async def test_an_unreachable_owner_is_a_503_and_is_looked_up_again_next_time(
    client: httpx.AsyncClient, table: Table, owner: Owner
) -> None:
    owner.down = True
    response = await client.delete(f"/api/job/{JOB}", headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 503
    error = response.json()["error"]
    assert f"its owner {OWNER} at {OWNER_URL} cannot be reached (ConnectError" in error
    assert "s3cret" not in error
    reads = table.reads
    owner.down = False
    assert (await client.delete(f"/api/job/{JOB}")).status_code == 200
    assert table.reads == reads + 1  # the owner was looked up again, not taken from the cache


async def test_the_owners_are_read_at_most_once_a_second(table: Table) -> None:
    now = [100.0]
    directory = Directory(table, ME, max_age_s=1.0, clock=lambda: now[0])
    assert await directory.owner_of(3) == Peer(OWNER, OWNER_URL)
    assert await directory.owner_of(5) == Peer(ME, "http://here:8080")
    assert await directory.owner_of(7) is None
    assert table.reads == 1
    table.owner = None
    now[0] += 1.5
    assert await directory.owner_of(3) is None
    assert table.reads == 2


async def test_a_job_whose_owner_cannot_be_asked_is_read_from_the_journal(
    client: httpx.AsyncClient, service: Service, table: Table, owner: Owner
) -> None:
    table.owner = None  # its partition is moving
    response = await client.get(f"/api/job/{JOB}")
    assert (response.status_code, service.replayed) == (404, [JOB])
    assert response.json()["error"].startswith(f"no job {JOB}")
    assert (await client.get(f"/api/job/{JOB}/steps")).status_code == 503
    assert owner.got == []


@pytest.mark.parametrize(
    ("knows", "status", "answered_by"),
    [({"there"}, 200, OWNER), ({"third"}, 200, "third:3"), (set(), 404, None)],
)
async def test_a_job_of_no_known_partition_is_asked_of_every_other_manager_in_turn(
    client: httpx.AsyncClient,
    service: Service,
    table: Table,
    owner: Owner,
    knows: set[str],
    status: int,
    answered_by: str | None,
) -> None:
    service.unknown = True  # a running child job that has written nothing yet, say
    table.members_.append(Member("third:3", "http://third:8080", 0.1))
    owner.knows = knows
    body = json.dumps({"ok": True}).encode()
    headers = {"Content-Type": "application/json"}
    response = await client.post(f"/api/job/{JOB}/signal/approve", content=body, headers=headers)
    assert response.status_code == status, response.text
    assert response.headers.get(ANSWERED_BY) == answered_by
    asked = [request.url.host for request in owner.got]
    assert asked == ["there", "third"][: 1 if knows == {"there"} else 2]
    assert all(r.headers[FORWARDED_BY] == ME and r.content == body for r in owner.got)
    if status == 404:
        assert response.json() == {"error": f"no job {JOB}"}


async def test_a_forwarded_request_for_a_job_of_no_known_partition_is_a_404_here(
    client: httpx.AsyncClient, service: Service, owner: Owner
) -> None:
    service.unknown = True
    response = await client.get(f"/api/job/{JOB}", headers={FORWARDED_BY: "there:2"})
    assert (response.status_code, response.json()) == (404, {"error": f"no job {JOB}"})
    owner.down = True
    assert (await client.delete(f"/api/job/{JOB}")).status_code == 404  # none reachable
    assert owner.got == []
