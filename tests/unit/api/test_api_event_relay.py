"""`GET /api/events?job=` for a job another manager runs: that manager's stream, relayed until
it ends or the job's partition moves; a 503 naming the partition when it cannot be asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from workflow_manager.api import create_app
from workflow_manager.api.forwarding import ANSWERED_BY, FORWARDED_BY, Forwarder
from workflow_manager.errors import JournalError, NotOwner
from workflow_manager.events import EventHub
from workflow_manager.events.sse import SseMessage, format_event, read_events

from ..events.streaming import StreamingASGITransport
from .clusterfakes import AWAY, ME, THERE, Peers, Service, Table, ids_in

JOB = ids_in(2, 1, "e")[0]  # in partition 2: THERE runs it
LAST_ID = "1732441234567-42"
_END = b""


class OwnerStream(httpx.AsyncByteStream):
    """The owner's event stream: what the test puts, until it puts `_END`; knows if closed."""

    def __init__(self) -> None:
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self.closed = asyncio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await self.chunks.get()) != _END:
            yield chunk

    async def aclose(self) -> None:
        self.closed.set()


@pytest.fixture
def owner_stream() -> OwnerStream:
    return OwnerStream()


@pytest.fixture
def table() -> Table:
    return Table()


@pytest.fixture
def peers(owner_stream: OwnerStream) -> Peers:
    async def stream(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        return httpx.Response(200, headers=headers, stream=owner_stream)

    return Peers(answers={"there": stream})


@pytest.fixture
def service(table: Table) -> Service:
    service = Service(table)

    async def foreign(job_id: str) -> None:
        raise NotOwner(f"job {job_id} is in partition 2, which another manager runs", 2)

    service.find = foreign
    return service


@pytest.fixture
async def hub() -> AsyncIterator[EventHub]:
    hub = EventHub(heartbeat_s=0.05)
    yield hub
    hub.close()


@pytest.fixture
async def client(service: Service, peers: Peers, hub: EventHub) -> AsyncIterator[httpx.AsyncClient]:
    forwarder = Forwarder(httpx.MockTransport(peers))
    app = create_app(service, forwarder=forwarder, events=hub)  # type: ignore[arg-type]
    transport = StreamingASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://here:8080") as http:
        yield http
    await forwarder.close()


def event(seq: int, kind: str) -> bytes:
    return format_event(kind, {"type": kind, "job": JOB}, f"99-{seq}").encode()


async def messages(response: httpx.Response) -> AsyncIterator[SseMessage]:
    async for message in read_events(response.aiter_lines()):
        yield message


async def test_the_owners_stream_is_relayed_until_it_ends(
    client: httpx.AsyncClient, peers: Peers, owner_stream: OwnerStream
) -> None:
    await owner_stream.chunks.put(b": connected\n\n" + event(1, "job.started"))
    headers = {"Last-Event-ID": LAST_ID, "Authorization": "Bearer s3cret"}
    async with client.stream("GET", f"/api/events?job={JOB}", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers[ANSWERED_BY] == THERE
        read = messages(response)
        first = await anext(read)
        assert (first.event, first.id) == ("job.started", "99-1")
        await owner_stream.chunks.put(event(2, "job.completed"))
        assert (await anext(read)).event == "job.completed"
        await owner_stream.chunks.put(_END)
        with pytest.raises(StopAsyncIteration):  # the owner's ended: so does ours
            await anext(read)
    [sent] = peers.got
    assert str(sent.url) == f"http://there:8080/api/events?job={JOB}"
    assert sent.headers["Last-Event-ID"] == LAST_ID
    assert sent.headers[FORWARDED_BY] == ME
    assert sent.headers["Authorization"] == "Bearer s3cret"
    assert owner_stream.closed.is_set()


async def test_the_relay_ends_once_the_jobs_partition_has_another_owner(
    client: httpx.AsyncClient, table: Table, owner_stream: OwnerStream
) -> None:
    await owner_stream.chunks.put(event(1, "job.started"))
    async with client.stream("GET", f"/api/events?job={JOB}") as response:
        read = messages(response)
        assert (await anext(read)).event == "job.started"
        table.owners[2] = AWAY  # handed over: THERE's stream will bring nothing more of it
        await owner_stream.chunks.put(b": keepalive\n\n")
        with pytest.raises(StopAsyncIteration):
            await anext(read)
    await asyncio.wait_for(owner_stream.closed.wait(), 5)


async def test_a_client_that_goes_closes_the_owners_stream(
    client: httpx.AsyncClient, owner_stream: OwnerStream
) -> None:
    await owner_stream.chunks.put(event(1, "job.started"))
    async with client.stream("GET", f"/api/events?job={JOB}") as response:
        assert (await anext(messages(response))).event == "job.started"
    await owner_stream.chunks.put(b": keepalive\n\n")  # wakes the relay to see it gone
    await asyncio.wait_for(owner_stream.closed.wait(), 5)


@pytest.mark.parametrize(
    ("owner", "said"),
    [(None, "no manager holds it now"), (AWAY, f"its owner {AWAY} at http://away:8080")],
)
async def test_an_owner_that_cannot_be_asked_is_a_503_naming_the_partition(
    client: httpx.AsyncClient, table: Table, owner: str | None, said: str
) -> None:
    table.owners[2] = owner
    response = await client.get(f"/api/events?job={JOB}")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"].startswith(f"job {JOB} is in partition 2")
    assert said in response.json()["error"]


async def test_the_owners_refusal_is_passed_on(client: httpx.AsyncClient, peers: Peers) -> None:
    async def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": "header 'Last-Event-ID' ..."})

    peers.answers["there"] = refuse
    response = await client.get(f"/api/events?job={JOB}")
    assert (response.status_code, response.headers[ANSWERED_BY]) == (400, THERE)
    assert response.json() == {"error": "header 'Last-Event-ID' ..."}


@pytest.mark.parametrize(
    "found",
    ["ours", "unknown", "journal-down", "unpartitioned"],
)
async def test_a_job_not_run_elsewhere_is_followed_here(
    client: httpx.AsyncClient, service: Service, peers: Peers, hub: EventHub, found: str
) -> None:
    async def find(job_id: str) -> None:
        if found == "unknown":  # no job has that id: not yet submitted, say
            raise NotOwner(f"no job {job_id}", None)
        if found == "journal-down":
            raise JournalError("cannot read the journal")

    service.find = find
    if found == "unpartitioned":
        service.directory = None
    async with client.stream("GET", f"/api/events?job={JOB}") as response:
        assert response.status_code == 200
        assert ANSWERED_BY not in response.headers
        assert (await anext(response.aiter_text())).startswith(": connected")
        assert hub.subscribers == 1
    assert peers.got == []
    assert service.found == ([] if found == "unpartitioned" else [JOB])


async def test_a_stream_without_job_stays_here(
    client: httpx.AsyncClient, service: Service, peers: Peers
) -> None:
    async with client.stream("GET", "/api/events?workflow=wordcount&scope=local") as response:
        assert response.status_code == 200
        assert (await anext(response.aiter_text())).startswith(": connected")
    assert (peers.got, service.found) == ([], [])
