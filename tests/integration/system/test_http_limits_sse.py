"""The cap on event streams (`GET /api/events`) of a real manager: 1,100 clients against the
default of 1,000."""

from __future__ import annotations

import asyncio
import resource
import time

from workflow_manager.limits import DEFAULT_LIMITS

from .rawhttp import Answer, RawConnection

MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""

CAP = int(DEFAULT_LIMITS["max_event_streams"])


def _enough_files(wanted: int) -> None:
    """Raise this process's open-file limit (the manager inherits it) to `wanted`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


async def _stream(api_url: str) -> tuple[RawConnection, Answer]:
    """Open an event stream; the connection and the answer's head (and body, when it is one)."""
    conn = await RawConnection.open(api_url)
    await conn.send(conn.head("GET", "/api/events", "Accept: text/event-stream"))
    answer = await conn.answer(timeout_s=60, body=False)
    if "content-length" in answer.headers:
        answer.body = await conn.reader.readexactly(int(answer.headers["content-length"]))
    return conn, answer


async def test_past_the_cap_of_event_streams_clients_get_503_until_one_closes(system):
    _enough_files(3 * (CAP + 100) + 1024)  # this process's sockets, and the manager's
    sys_ = await system(MANUAL)
    url = sys_.manager.api_url
    opened: list[tuple[RawConnection, Answer]] = []
    for _ in range(CAP // 100):  # a hundred at a time, each answered before the next hundred
        opened += await asyncio.gather(*(_stream(url) for _ in range(100)))
    assert [answer.status for _, answer in opened] == [200] * CAP
    assert all(a.headers["content-type"].startswith("text/event-stream") for _, a in opened)

    over = await asyncio.gather(*(_stream(url) for _ in range(100)))
    assert [answer.status for _, answer in over] == [503] * 100
    refused = over[0][1]
    assert refused.headers["retry-after"] == "1"
    assert "--max-event-streams" in refused.json()["error"]
    assert f"{CAP} event streams are open" in refused.json()["error"]
    for conn, _ in over:
        await conn.close()
    # Other requests are still answered.
    assert (await sys_.http.get("/api/jobs")).status_code == 200

    conn, _ = opened.pop()
    await conn.close()  # its place is free once the manager sees it gone
    deadline = time.monotonic() + 15
    while True:
        again, answer = await _stream(url)
        if answer.status == 200:
            opened.append((again, answer))
            break
        await again.close()
        assert answer.status == 503 and time.monotonic() < deadline, answer
        await asyncio.sleep(0.05)  # polling with a deadline
    extra, answer = await _stream(url)
    assert answer.status == 503  # full again
    await extra.close()
    for conn, _ in opened:
        await conn.close()
