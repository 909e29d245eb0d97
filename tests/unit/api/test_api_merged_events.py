"""`GET /api/events` without `job` on a partitioned manager: its own events and every other
member's (relayed, asked with `x-wm-forwarded-by` and `scope=local`), one stream whose ids
are cursors of every manager's last id; the cursor's form; what is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from workflow_manager.api import create_app
from workflow_manager.api.forwarding import FORWARDED_BY, Forwarder
from workflow_manager.api.mergedevents import format_cursor, parse_cursor
from workflow_manager.cluster.view import Member
from workflow_manager.events import EventHub
from workflow_manager.events.sse import SseMessage, format_event, read_events
from workflow_manager.settings import HttpSettings

from ..events.streaming import StreamingASGITransport
from ..events.test_hub import ROOT, finished, started
from .clusterfakes import AWAY, ME, THERE, URLS, Peers, Service, Table

THERE_LATEST = "99-5"


class MemberStreams:
    """THERE's event streams: each connection gets the chunks the test puts from then on."""

    def __init__(self) -> None:
        self.live: asyncio.Queue[asyncio.Queue[bytes]] = asyncio.Queue()

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        chunks: asyncio.Queue[bytes] = asyncio.Queue()
        if request.headers.get("last-event-id") == "0-0":  # the seed: THERE's latest id
            await chunks.put(format_event("reset", {"reason": "other"}, THERE_LATEST).encode())
        await self.live.put(chunks)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Stream(chunks)
        )


class _Stream(httpx.AsyncByteStream):
    def __init__(self, chunks: asyncio.Queue[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while chunk := await self.chunks.get():
            yield chunk


def there_event(seq: int, kind: str = "job.started") -> bytes:
    return format_event(kind, {"type": kind, "job": "there-job"}, f"99-{seq}").encode()


@pytest.fixture
def streams() -> MemberStreams:
    return MemberStreams()


@pytest.fixture
def peers(streams: MemberStreams) -> Peers:
    return Peers(answers={"there": streams})  # AWAY cannot be reached


@pytest.fixture
async def hub() -> AsyncIterator[EventHub]:
    hub = EventHub(heartbeat_s=0.05)
    yield hub
    hub.close()


@pytest.fixture
async def client(peers: Peers, hub: EventHub) -> AsyncIterator[httpx.AsyncClient]:
    forwarder = Forwarder(httpx.MockTransport(peers))
    http_settings = HttpSettings(max_event_streams=1)
    app = create_app(Service(Table()), forwarder=forwarder, events=hub, http=http_settings)  # type: ignore[arg-type]
    transport = StreamingASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://here:8080") as http:
        yield http
    await forwarder.close()


async def until(read: AsyncIterator[SseMessage], event: str) -> SseMessage:
    """The next message of type `event` (others skipped)."""
    async for message in read:
        if message.event == event:
            return message
    raise AssertionError(f"the stream ended before a {event}")


async def test_every_managers_events_come_in_one_stream_with_cursor_ids(
    client: httpx.AsyncClient, peers: Peers, streams: MemberStreams, hub: EventHub
) -> None:
    headers = {"Authorization": "Bearer s3cret"}
    async with client.stream("GET", "/api/events", headers=headers) as response:
        assert response.status_code == 200
        read = read_events(response.aiter_lines())
        unreached = await until(read, "member")  # AWAY: said, never a failed stream
        assert unreached.json()["manager"] == AWAY
        assert unreached.json()["status"] == "unreached"
        there = await asyncio.wait_for(streams.live.get(), 5)
        await there.put(there_event(6))
        relayed = await until(read, "job.started")
        assert relayed.json()["job"] == "there-job"  # its seed `reset` was not relayed
        own_latest = hub.latest_id
        assert parse_cursor(relayed.id or "") == {ME: own_latest, THERE: "99-6"}
        hub.observe([started()])
        own = await until(read, "job.started")
        assert own.json()["job"] == ROOT
        assert parse_cursor(own.id or "") == {ME: hub.latest_id, THERE: "99-6"}
    asked = [r for r in peers.got if r.url.host == "there"]
    assert asked[0].url.params["scope"] == "local"
    assert asked[0].headers[FORWARDED_BY] == ME
    assert asked[0].headers["last-event-id"] == "0-0"
    assert asked[0].headers["authorization"] == "Bearer s3cret"


async def test_a_reconnect_with_the_cursor_resumes_each_manager(
    client: httpx.AsyncClient, peers: Peers, streams: MemberStreams, hub: EventHub
) -> None:
    hub.observe([started()])
    before = hub.latest_id
    hub.observe([finished()])  # missed by the client: comes from this manager's ring
    cursor = format_cursor({ME: before, THERE: "99-3", AWAY: "77-1"})
    async with client.stream("GET", "/api/events", headers={"Last-Event-ID": cursor}) as response:
        assert response.status_code == 200
        read = read_events(response.aiter_lines())
        missed = await until(read, "job.completed")
        assert parse_cursor(missed.id or "") == {ME: hub.latest_id, THERE: "99-3", AWAY: "77-1"}
        there = await asyncio.wait_for(streams.live.get(), 5)
        await there.put(there_event(4))
        relayed = await until(read, "job.started")
        assert parse_cursor(relayed.id or "")[THERE] == "99-4"
    asked = [r for r in peers.got if r.url.host in ("there", "away")]
    assert {r.url.host: r.headers["last-event-id"] for r in asked} == {
        "there": "99-3",
        "away": "77-1",
    }


async def test_a_lost_member_is_said_and_resumed_from_its_last_id(
    client: httpx.AsyncClient, peers: Peers, streams: MemberStreams
) -> None:
    async with client.stream("GET", "/api/events") as response:
        read = read_events(response.aiter_lines())
        there = await asyncio.wait_for(streams.live.get(), 5)
        await there.put(there_event(6))
        await until(read, "job.started")
        await there.put(b"")  # THERE's stream ends
        lost = await until(read, "member")
        while lost.json()["manager"] != THERE:
            lost = await until(read, "member")
        assert lost.json()["status"] == "unreached"
        again = await asyncio.wait_for(streams.live.get(), 5)
        resumed = await until(read, "member")
        assert (resumed.json()["manager"], resumed.json()["status"]) == (THERE, "resumed")
        await again.put(there_event(7))
        assert parse_cursor((await until(read, "job.started")).id or "")[THERE] == "99-7"
    there_asked = [r.headers["last-event-id"] for r in peers.got if r.url.host == "there"]
    assert there_asked[:2] == ["0-0", "99-6"]


async def test_scope_local_and_forwarded_streams_carry_this_managers_events_only(
    client: httpx.AsyncClient, peers: Peers
) -> None:
    async with client.stream("GET", "/api/events?scope=local") as response:
        assert response.status_code == 200
        assert (await anext(response.aiter_text())).startswith(": connected")
    assert peers.got == []
    # A member's relay takes no place of this manager's own (max_event_streams=1).
    async with client.stream("GET", "/api/events", headers={FORWARDED_BY: THERE}) as first:
        async with client.stream("GET", "/api/events", headers={FORWARDED_BY: AWAY}) as second:
            assert (first.status_code, second.status_code) == (200, 200)
            async with client.stream("GET", "/api/events?scope=local") as own:
                assert own.status_code == 200
    assert peers.got == []


@pytest.mark.parametrize(
    ("header", "query"),
    [
        ("nonsense", ""),
        ("here:1:99-x", ""),
        ("a:1-1,a:1-2", ""),  # a manager twice
        ("nonsense", "?scope=local"),
    ],
)
async def test_a_malformed_last_event_id_is_a_400_naming_it(
    client: httpx.AsyncClient, header: str, query: str
) -> None:
    response = await client.get(f"/api/events{query}", headers={"Last-Event-ID": header})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error.startswith(f"header 'Last-Event-ID' {header!r} is not an event id")
    assert "m1:1732441234567-42,m2:1732441299000-7" in error


async def test_an_unknown_scope_is_a_400_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/events?scope=everywhere")
    assert response.status_code == 400
    assert response.json()["error"] == (
        "query parameter 'scope' 'everywhere' is not one of cluster, local"
    )


@pytest.mark.parametrize(
    "positions",
    [
        {"m1": "1-12", "m2": "2-40"},
        {"here:1": "1732441234567-0"},
        {"a,b": "1-1", "c%d": "2-2", "é": "3-3"},
        {},
    ],
)
def test_a_cursor_reads_back_as_it_was_written(positions: dict[str, str]) -> None:
    text = format_cursor(positions)
    assert "\n" not in text and " " not in text
    assert parse_cursor(text) == (positions or None)  # no entry: no cursor


def test_a_cursor_lists_the_managers_by_name_compactly() -> None:
    assert format_cursor({"m2": "2-40", "m1": "1-12"}) == "m1:1-12,m2:2-40"
    assert format_cursor({"here:1": "5-6"}) == "here%3A1:5-6"


@pytest.mark.parametrize(
    "text",
    ["", "m1", "m1:", ":1-2", "m1:1-2,", "m1:1-2,m1:1-3", "m1:12", "m1:1-2;m2:1-2", "m1:a-b"],
)
def test_a_malformed_cursor_is_none(text: str) -> None:
    assert parse_cursor(text) is None


def test_a_cursor_has_at_most_so_many_entries() -> None:
    many = {f"m{k}": "1-1" for k in range(257)}
    assert parse_cursor(format_cursor(many)) is None


class ChangingTable(Table):
    """The lease table, with members the test lets go and come back."""

    def __init__(self) -> None:
        super().__init__()
        self.alive = {ME, THERE}

    async def members(self) -> list[Member]:
        return [Member(name, URLS[name], 0.1) for name in sorted(self.alive)]


async def test_a_member_that_leaves_is_dropped_and_one_that_comes_back_resumes(
    peers: Peers, streams: MemberStreams, hub: EventHub
) -> None:
    table = ChangingTable()
    forwarder = Forwarder(httpx.MockTransport(peers))
    app = create_app(Service(table), forwarder=forwarder, events=hub)  # type: ignore[arg-type]
    transport = StreamingASGITransport(app)
    cursor = format_cursor({ME: hub.latest_id, "gone:9": "5-5"})
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://here:8080") as http,
        http.stream("GET", "/api/events", headers={"Last-Event-ID": cursor}) as response,
    ):
        read = read_events(response.aiter_lines())
        gone = await until(read, "member")  # in the cursor, no longer a member
        assert (gone.json()["manager"], gone.json()["status"]) == ("gone:9", "left")
        there = await asyncio.wait_for(streams.live.get(), 5)
        await there.put(there_event(6))
        assert parse_cursor((await until(read, "job.started")).id or "") == {
            ME: hub.latest_id,
            THERE: "99-6",
        }
        table.alive.discard(THERE)
        left = await until(read, "member")
        assert (left.json()["manager"], left.json()["status"]) == (THERE, "left")
        hub.observe([started()])
        assert parse_cursor((await until(read, "job.started")).id or "") == {ME: hub.latest_id}
        table.alive.add(THERE)
        back = await until(read, "member")
        assert (back.json()["manager"], back.json()["status"]) == (THERE, "resumed")
        again = await asyncio.wait_for(streams.live.get(), 5)
        await again.put(there_event(7))
        assert parse_cursor((await until(read, "job.started")).id or "")[THERE] == "99-7"
    await forwarder.close()
    there_asked = [r.headers["last-event-id"] for r in peers.got if r.url.host == "there"]
    assert there_asked == ["0-0", "99-6"]  # back: from its last id sent
