"""The dead-letter listing of a real manager comes in pages of previews, and a replay names one
letter by its own id and sends it whole."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import aio_pika
import pytest

from workflow_manager.api.deadletters import MAX_PAGE, PREVIEW_BYTES

from ..harness import cli

MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""

MIB = 1024 * 1024


@pytest.fixture
async def channel(amqp_url: str, unique: str) -> AsyncIterator[aio_pika.abc.AbstractChannel]:
    """A plain client; afterwards it deletes this test's target queue."""
    connection = await aio_pika.connect(amqp_url)
    chan = await connection.channel()
    yield chan
    await chan.queue_delete(f"{unique}.target")
    await connection.close()


async def _dead_letters(
    channel: aio_pika.abc.AbstractChannel, queue: str, target: str, bodies: list[bytes],
    correlation_id: str | None = None,
) -> None:  # fmt: skip
    """Dead letters as the manager writes them, from `target`, in `<queue>.dead`."""
    await channel.declare_queue(target, durable=True)
    for index, body in enumerate(bodies):
        headers = {"x-dead-reason": f"bad {index}", "x-dead-from": target, "x-dead-at": index}
        message = aio_pika.Message(
            body, headers=headers, correlation_id=correlation_id or str(index)
        )
        await channel.default_exchange.publish(message, f"{queue}.dead")


def _big(index: int) -> bytes:
    """A 2 MB JSON body, different for each index."""
    return json.dumps({"i": index, "pad": "é" * MIB}).encode()


async def test_twenty_letters_of_2_mb_are_listed_in_small_pages_of_previews(system, channel):
    sys_ = await system(MANUAL)
    queue = sys_.manager.queue
    bodies = [_big(i) for i in range(20)]
    await _dead_letters(channel, queue, f"{sys_.prefix}.target", bodies)

    started = time.monotonic()
    answer = await sys_.http.get("/api/dead-letters")
    elapsed_s = time.monotonic() - started
    assert answer.status_code == 200
    assert len(answer.content) < 5 * MIB and elapsed_s < 5, (len(answer.content), elapsed_s)
    listing = answer.json()
    assert (listing["total"], listing["more"], listing["next_offset"]) == (20, False, None)
    assert listing["preview_bytes"] == PREVIEW_BYTES
    letters = listing["letters"]
    assert [letter["reason"] for letter in letters] == [f"bad {i}" for i in range(20)]
    for letter, body in zip(letters, bodies, strict=True):
        assert letter["body_truncated"] is True and letter["body_bytes"] == len(body)
        # The start of the body, whole characters only (a 2-byte one may straddle the cut).
        assert body.decode().startswith(letter["body"])
        assert PREVIEW_BYTES - 1 <= len(letter["body"].encode()) <= PREVIEW_BYTES
    assert len({letter["id"] for letter in letters}) == 20

    # Pages: 8, 8, then the last 4; each says where the next starts.
    seen, offset = [], 0
    while offset is not None:
        page = await sys_.http.get("/api/dead-letters", params={"limit": 8, "offset": offset})
        page = page.json()
        assert page["offset"] == offset and page["total"] == 20
        seen.append([letter["id"] for letter in page["letters"]])
        offset = page["next_offset"]
    assert [len(ids) for ids in seen] == [8, 8, 4]
    assert sum(seen, []) == [letter["id"] for letter in letters]
    too_many = await sys_.http.get("/api/dead-letters", params={"limit": MAX_PAGE + 1})
    assert too_many.status_code == 400 and "limit" in too_many.json()["error"]


async def test_a_replay_by_letter_id_sends_exactly_that_letter_whole(system, channel):
    sys_ = await system(MANUAL)
    queue, target = sys_.manager.queue, f"{sys_.prefix}.target"
    shared = "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10:hand"
    bodies = [_big(0), _big(1), b'{"small": true}']
    await _dead_letters(channel, queue, target, bodies, correlation_id=shared)
    letters = (await sys_.http.get("/api/dead-letters")).json()["letters"]
    assert [letter["correlation_id"] for letter in letters] == [shared] * 3
    second = letters[1]["id"]

    replayed = await sys_.http.post("/api/dead-letters/replay", json={"id": second})
    assert replayed.json() == {"replayed": 1}
    arrived = await (await channel.get_queue(target)).get(timeout=10)
    assert arrived.body == bodies[1]  # whole, not the preview
    await arrived.ack()
    left = (await sys_.http.get("/api/dead-letters")).json()["letters"]
    assert [letter["id"] for letter in left] == [letters[0]["id"], letters[2]["id"]]
    again = await sys_.http.post("/api/dead-letters/replay", json={"id": second})
    assert again.json() == {"replayed": 0}
    both = await sys_.http.post("/api/dead-letters/replay", json={"id": second, "all": True})
    assert both.status_code == 400 and '{"id": "<letter id>"}' in both.json()["error"]

    # The command line: --letter replays one letter, --id (a correlation id) every one with it.
    args = ("--amqp-url", sys_.amqp_url, "--queue", queue)
    code, out, _ = await cli("dead-letters", "list", *args)
    assert code == 0 and letters[2]["id"] in out and second not in out
    code, out, _ = await cli("dead-letters", "replay", "--letter", letters[2]["id"], *args)
    assert (code, out.strip()) == (0, "replayed 1 dead letter")
    code, out, _ = await cli("dead-letters", "replay", "--id", shared, *args)
    assert (code, out.strip()) == (0, "replayed 1 dead letter")
    assert (await sys_.http.get("/api/dead-letters")).json()["total"] == 0
