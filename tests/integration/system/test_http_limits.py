"""Limits at the HTTP edge of a real manager: body, URL and header sizes, slow and idle clients,
and connections at once. Raw sockets, so each test sends exactly what an attacker would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

from .rawhttp import RawConnection, manager_rss_bytes

MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""

MIB = 1024 * 1024


async def test_a_body_declared_over_the_limit_is_refused_before_it_is_read(system):
    sys_ = await system(MANUAL)
    conn = await RawConnection.open(sys_.manager.api_url)
    length = f"Content-Length: {20 * MIB}"
    await conn.send(conn.head("POST", "/api/workflow/manual", "Content-Type: application/json",
                              length))  # fmt: skip
    answer = await conn.answer()  # answered with no byte of the body sent
    assert answer.status == 413
    assert answer.headers["connection"] == "close"
    error = answer.json()["error"]
    assert f"over {16 * MIB} bytes" in error and "--max-body-bytes" in error
    assert await conn.closed_by_peer() == b""
    await conn.close()
    assert (await sys_.http.get("/api/jobs")).json() == {"jobs": []}


async def test_a_chunked_body_is_refused_as_it_passes_the_limit_and_never_held_whole(system):
    sys_ = await system(MANUAL)
    pid = sys_.manager.process.proc.pid
    assert (await sys_.http.get("/api/jobs")).status_code == 200  # warm: routes loaded
    before = manager_rss_bytes(pid)
    conn = await RawConnection.open(sys_.manager.api_url)
    await conn.send(conn.head("POST", "/api/workflow/manual", "Content-Type: application/json",
                              "Transfer-Encoding: chunked"))  # fmt: skip
    chunk = b"[" + b"1," * (32 * 1024 - 1) + b"1"  # 64 KiB of a JSON list, never closed
    frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sent = 0

    async def upload() -> None:
        nonlocal sent
        with contextlib.suppress(ConnectionError):
            while sent < 100 * MIB:  # far more than the limit: the server must stop it
                await conn.send(frame)
                sent += len(chunk)

    uploading = asyncio.create_task(upload())
    answer = await conn.answer(timeout_s=60)
    uploading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await uploading
    assert answer.status == 413, answer
    assert "--max-body-bytes" in answer.json()["error"]
    assert answer.headers["connection"] == "close"
    assert 16 * MIB <= sent < 100 * MIB  # refused once past the limit, long before the end
    assert manager_rss_bytes(pid) - before < 100 * MIB
    await conn.close()
    assert (await sys_.http.get("/api/jobs")).json() == {"jobs": []}


async def test_a_long_url_is_refused_with_414_and_long_headers_with_431(system):
    sys_ = await system(MANUAL)
    url = await sys_.http.get("/api/jobs", params={"workflow": "x" * 9000})
    assert url.status_code == 414
    assert "--max-url-bytes" in url.json()["error"] and "over 8192" in url.json()["error"]
    for whole in (True, False):  # the head sent at once, or still arriving when too large
        conn = await RawConnection.open(sys_.manager.api_url)
        head = conn.head("GET", "/api/jobs", "X-Big: " + "y" * (20 * 1024))
        await conn.send(head if whole else head[:-4])
        answer = await conn.answer()
        assert answer.status == 431, whole
        assert "--max-header-bytes" in answer.json()["error"]
        assert answer.headers["connection"] == "close"
        await conn.close()
    # Just under the limits, the same requests are answered.
    fits = await sys_.http.get("/api/jobs", headers={"X-Big": "y" * (12 * 1024)})
    assert fits.status_code == 200
    assert (await sys_.http.get("/api/jobs", params={"workflow": "x" * 7000})).status_code == 200


async def _trickle(conn: RawConnection, first: bytes, pause_s: float) -> None:
    """Send `first`, then one byte every `pause_s`, until the server closes the connection."""
    with contextlib.suppress(ConnectionError):
        await conn.send(first)
        while True:
            await asyncio.sleep(pause_s)  # the slow client's pace, not a wait for the server
            await conn.send(b"a")


async def test_a_slow_client_is_cut_off_after_the_request_timeout(system):
    sys_ = await system(MANUAL, manager_args=("--http-request-timeout", "1"))
    slow_head = await RawConnection.open(sys_.manager.api_url)
    head = slow_head.head("GET", "/api/jobs").removesuffix(b"\r\n\r\n") + b"\r\nX-Slow: "
    slow_body = await RawConnection.open(sys_.manager.api_url)
    post = slow_body.head("POST", "/api/workflow/manual", "Content-Type: application/json",
                          "Content-Length: 100000") + b'{"k": "'  # fmt: skip
    silent = await RawConnection.open(sys_.manager.api_url)
    tricklers = [
        asyncio.create_task(_trickle(slow_head, head, 0.1)),
        asyncio.create_task(_trickle(slow_body, post, 0.1)),
    ]
    # Meanwhile others are served.
    assert (await sys_.http.get("/api/jobs")).status_code == 200
    for conn in (slow_head, slow_body):
        sent = await conn.closed_by_peer(timeout_s=15)
        status, _, rest = sent.partition(b"\r\n")
        assert status == b"HTTP/1.1 408 ", sent
        body = json.loads(rest.partition(b"\r\n\r\n")[2])
        assert "within 1 s" in body["error"] and "--http-request-timeout" in body["error"]
    # A connection that never sends a byte is closed too, with nothing to answer.
    assert await silent.closed_by_peer(timeout_s=15) == b""
    for task in tricklers:
        task.cancel()
    for conn in (slow_head, slow_body, silent):
        await conn.close()
    assert (await sys_.http.get("/api/jobs")).json() == {"jobs": []}


async def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(system):
    sys_ = await system(MANUAL, manager_args=("--http-idle-timeout", "0.5"))
    conn = await RawConnection.open(sys_.manager.api_url)
    await conn.send(conn.head("GET", "/healthz"))
    assert (await conn.answer()).status == 200
    assert await conn.closed_by_peer(timeout_s=3) == b""  # by the server, idle (not at 5 s)
    await conn.close()


async def test_past_max_connections_a_request_is_answered_503_then_served_again(system):
    sys_ = await system(
        MANUAL, manager_args=("--max-connections", "4", "--http-idle-timeout", "60")
    )
    await sys_.http.aclose()  # its kept-alive connection would count
    held = []
    for _ in range(4):  # each answered once, so the server counts it before the next
        conn = await RawConnection.open(sys_.manager.api_url)
        await conn.send(conn.head("GET", "/healthz"))
        assert (await conn.answer()).status == 200
        held.append(conn)
    extra = await RawConnection.open(sys_.manager.api_url)
    await extra.send(extra.head("GET", "/api/jobs"))
    refused = await extra.answer()
    assert refused.status == 503 and refused.headers["retry-after"] == "1"
    assert "--max-connections" in refused.json()["error"]
    await extra.close()
    await held.pop().close()
    deadline = time.monotonic() + 10
    while True:  # the server notices the closed connection a moment later
        again = await RawConnection.open(sys_.manager.api_url)
        await again.send(again.head("GET", "/api/jobs"))
        answer = await again.answer()
        await again.close()
        if answer.status == 200:
            break
        assert answer.status == 503 and time.monotonic() < deadline
        await asyncio.sleep(0.05)  # polling with a deadline
    for conn in held:
        await conn.close()
