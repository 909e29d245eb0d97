"""`GET /api/jobs` and `GET /api/workflows` answer for the whole cluster on a partitioned
manager: its own jobs, each other manager's own answer, and the journal's running top-level
jobs of the partitions no manager answered for."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from workflow_manager.api import create_app
from workflow_manager.api.forwarding import FORWARDED_BY, Forwarder
from workflow_manager.journal.history import JobListing

from .clusterfakes import ME, THERE, FakeJob, Peers, Service, Table, answering, ids_in

OURS = ids_in(0, 2, "a")  # a running job of ours, and one of its children
THEIRS = ids_in(2, 1, "b")
AWAYS = ids_in(4, 2, "c")  # AWAY's: its API is down
UNHELD = ids_in(5, 1, "d")  # in partition 5, which no manager holds now


def listing(job_id: str, workflow: str, at: float) -> JobListing:
    return JobListing(job_id, workflow, "running", at, None)


@pytest.fixture
def table() -> Table:
    return Table()


@pytest.fixture
def peers() -> Peers:
    return Peers(
        answers={
            "there": answering(200, {"jobs": [*THEIRS, "child-of-theirs"]}),
        }
    )


@pytest.fixture
def service(table: Table) -> Service:
    service = Service(table)
    service.state.jobs = {
        OURS[0]: FakeJob(OURS[0], "wordcount"),
        OURS[1]: FakeJob(OURS[1], "books", parent="p"),
        "ended": FakeJob("ended", "wordcount", is_running=False),
    }
    service.history.running = [
        listing(OURS[0], "wordcount", 1.0),  # ours: answered from memory, not again
        listing(AWAYS[0], "wordcount", 2.0),
        listing(THEIRS[0], "parallel", 3.0),  # THERE answers for it
        listing(UNHELD[0], "parallel", 4.0),
        listing(AWAYS[1], "wordcount", 5.0),
        listing("keyed-into-4", "books", 6.0),
    ]
    service.history.placed = {"keyed-into-4": 4, AWAYS[1]: 0}  # placed by a key
    return service


@pytest.fixture
async def client(service: Service, peers: Peers) -> AsyncIterator[httpx.AsyncClient]:
    forwarder = Forwarder(httpx.MockTransport(peers))
    app = create_app(service, forwarder=forwarder)  # type: ignore[arg-type]
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://here:8080"
    ) as http:
        yield http
    await forwarder.close()


async def test_the_running_jobs_of_every_manager_are_listed_and_the_journal_stands_in(
    client: httpx.AsyncClient, peers: Peers
) -> None:
    response = await client.get("/api/jobs", headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 200, response.text
    # ME's (by name before THERE's), THERE's, then the journal's for partitions 4 and 5.
    expected = [*OURS, *THEIRS, "child-of-theirs", AWAYS[0], UNHELD[0], "keyed-into-4"]
    assert response.json() == {"jobs": expected}
    asked = sorted((r.url.host, r.url.path) for r in peers.got)
    assert asked == [("away", "/api/jobs"), ("there", "/api/jobs")]
    assert all(r.headers[FORWARDED_BY] == ME for r in peers.got)
    assert all(r.headers["Authorization"] == "Bearer s3cret" for r in peers.got)


async def test_the_workflows_count_every_managers_running_jobs(
    client: httpx.AsyncClient, peers: Peers
) -> None:
    theirs = [
        {"vhost": "", "name": "wordcount", "job_count": 3},
        {"vhost": "", "name": "parallel", "job_count": 1},
        {"vhost": "eu", "name": "hosted", "job_count": 2},
        {"vhost": "us", "name": "hosted", "job_count": 2},
    ]
    peers.answers["there"] = answering(200, theirs)
    response = await client.get("/api/workflows")
    assert response.status_code == 200, response.text
    counts = {(e["vhost"], e["name"]): e["job_count"] for e in response.json()}
    # wordcount: 1 of ours, 3 of THERE's, AWAYS[0] from the journal (AWAYS[1] is in 0: ours).
    assert counts == {
        ("", "wordcount"): 5,
        ("", "parallel"): 2,  # THERE's, and UNHELD's from the journal
        ("", "books"): 1,  # keyed-into-4 (our child job is no top-level job)
        ("eu", "hosted"): 2,
        ("us", "hosted"): 2,
    }
    assert [e["name"] for e in response.json()] == [
        "wordcount",
        "parallel",
        "books",
        "hosted",
        "hosted",
    ]


@pytest.mark.parametrize(
    "answer",
    [answering(500, {"error": "boom"}), answering(200, {"not": "an answer"})],
    ids=["error", "no-answer"],
)
async def test_a_manager_that_gives_no_answer_is_stood_in_for_by_the_journal(
    client: httpx.AsyncClient, peers: Peers, answer: object
) -> None:
    peers.answers["there"] = answer  # type: ignore[assignment]
    response = await client.get("/api/jobs")
    assert response.status_code == 200, response.text
    # THERE's top-level job from the journal, in the journal's order; its children are missing.
    assert response.json()["jobs"] == [*OURS, AWAYS[0], THEIRS[0], UNHELD[0], "keyed-into-4"]


async def test_a_request_from_another_manager_is_answered_for_this_one_alone(
    client: httpx.AsyncClient, service: Service, peers: Peers
) -> None:
    headers = {FORWARDED_BY: THERE}
    jobs = await client.get("/api/jobs", headers=headers)
    assert jobs.json() == {"jobs": OURS}
    summaries = await client.get("/api/workflows", headers=headers)
    assert {e["name"]: e["job_count"] for e in summaries.json()}["wordcount"] == 1
    assert (peers.got, service.history.reads) == ([], 0)


async def test_unpartitioned_nothing_is_asked_nor_read(
    client: httpx.AsyncClient, service: Service, peers: Peers
) -> None:
    service.directory = None
    assert (await client.get("/api/jobs")).json() == {"jobs": OURS}
    assert (await client.get("/api/workflows")).status_code == 200
    assert (peers.got, service.history.reads) == ([], 0)


async def test_without_the_lease_table_the_answer_is_this_managers(
    client: httpx.AsyncClient, service: Service, table: Table, peers: Peers
) -> None:
    table.broken = True
    assert (await client.get("/api/jobs")).json() == {"jobs": OURS}
    assert (peers.got, service.history.reads) == ([], 0)


async def test_every_manager_answering_needs_no_journal_read(
    client: httpx.AsyncClient, service: Service, table: Table, peers: Peers
) -> None:
    table.owners = {k: ME if k < 3 else THERE for k in table.owners}
    assert (await client.get("/api/jobs")).json() == {"jobs": [*OURS, *THEIRS, "child-of-theirs"]}
    assert service.history.reads == 0
