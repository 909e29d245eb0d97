"""The outbox: one retry policy for every publish, and sent marks in the journal."""

from __future__ import annotations

import asyncio

import pytest

from workflow_manager.errors import BrokerError
from workflow_manager.journal import Batch, EventKind, EventRow, open_journal
from workflow_manager.outbox import Outbox
from workflow_manager.transport import Delivery, Outbound, step_request
from workflow_manager.transport.memory import MemoryTransport


class Flaky(MemoryTransport):
    """Refuses the first `failures` publishes with a broker error, as a dropped connection does."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.attempts = 0

    async def publish(self, message: Outbound) -> None:
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            raise BrokerError("connection reset")
        await super().publish(message)


async def _outbox(tmp_path, transport):
    journal = await open_journal(tmp_path / "wm.db")
    failures: list[BaseException] = []
    return Outbox(transport, journal, lambda: 1.0, failures.append, retry_s=0.01), journal


async def test_a_step_request_whose_queue_vanished_declares_it_again_and_goes_out(tmp_path):
    transport = MemoryTransport()
    outbox, journal = await _outbox(tmp_path, transport)
    request = step_request("gone", b"{}", "j:s", "wm", "w", 1, "j:s:1")
    await outbox.publish([request])
    assert transport.sent_to("gone") == [request] and "gone" in transport.declared
    await journal.close()


async def test_a_notice_to_a_reply_queue_that_is_gone_is_dropped(tmp_path):
    transport = MemoryTransport()
    outbox, journal = await _outbox(tmp_path, transport)
    await outbox.publish([Outbound("nobody", b"{}", "j", message_id="notice:j:nobody")])
    assert transport.published == [] and "nobody" not in transport.declared
    await journal.close()


async def test_a_broker_error_holds_the_message_until_it_goes_out_and_is_marked_sent(tmp_path):
    transport = Flaky(failures=3)
    transport.declared.add("q")
    outbox, journal = await _outbox(tmp_path, transport)
    row = EventRow(at=1.0, kind=EventKind.DISPATCHED, body=b"{}", msg_id="j:s:1")
    await journal.append(Batch(events=[row]))
    assert [r.msg_id for r in await journal.pending_outbound()] == ["j:s:1"]
    await outbox.publish([Outbound("q", b"{}", "j:s", message_id="j:s:1", step_request=True)])
    assert len(transport.sent_to("q")) == 1
    assert transport.held_counts == {"publishes held back, then sent": 1}  # once, not per try
    await asyncio.sleep(0)  # the sent marks are written with the next loop tick
    await journal.flush()
    assert await journal.pending_outbound() == []
    await journal.close()


async def test_while_disconnected_a_held_publish_waits_for_the_connection_not_a_timer(tmp_path):
    transport = Flaky(failures=1)
    transport.declared.add("q")
    transport.connected = False  # the outage has been noticed
    outbox, journal = await _outbox(tmp_path, transport)
    publishing = asyncio.ensure_future(outbox.publish([Outbound("q", b"{}", "j:s")]))
    done, _ = await asyncio.wait([publishing], timeout=0.2)  # 20 retry periods
    assert not done and transport.attempts == 1  # one try, then it waits for the event
    transport.connected = True
    await publishing
    assert transport.attempts == 2 and len(transport.sent_to("q")) == 1
    await journal.close()


async def test_a_dead_letter_keeps_the_message_and_says_why(tmp_path):
    transport = Flaky(failures=1)
    outbox, journal = await _outbox(tmp_path, transport)
    delivery = Delivery("wm", b"junk", "c", "r", {"h": 1}, "m")
    await outbox.dead_letter(delivery, "wm.dead", "not JSON")
    (dead,) = transport.sent_to("wm.dead")  # declared again when it was missing
    headers = dict(dead.headers)
    assert isinstance(headers.pop("x-dead-at"), float)  # when, to show its age
    assert headers == {"h": 1, "x-dead-reason": "not JSON", "x-dead-from": "wm"}
    assert (dead.body, dead.correlation_id, dead.reply_to, dead.message_id) == (
        b"junk", "c", "r", "m",
    )  # fmt: skip
    await journal.close()


async def test_a_held_publish_gives_up_when_the_transport_closes_and_stays_unconfirmed(tmp_path):
    transport = Flaky(failures=1)
    transport.declared.add("q")
    transport.connected = False
    outbox, journal = await _outbox(tmp_path, transport)
    row = EventRow(at=1.0, kind=EventKind.DISPATCHED, body=b"{}", msg_id="j:s:1")
    await journal.append(Batch(events=[row]))
    message = Outbound("q", b"{}", "j:s", message_id="j:s:1", step_request=True)
    publishing = asyncio.ensure_future(outbox.publish([message]))
    done, _ = await asyncio.wait([publishing], timeout=0.05)
    assert not done
    await transport.close()  # the manager stopping (a new term): it must not spin, nor hang
    transport.connected = False
    # Another broker error wakes the lane: the closed transport ends its wait.
    transport.connected = True
    transport.connected = False
    with pytest.raises(BrokerError, match="closed"):
        await asyncio.wait_for(publishing, 5)
    await journal.flush()
    assert [r.msg_id for r in await journal.pending_outbound()] == ["j:s:1"]
    assert outbox.pending == 0
    await journal.close()


async def test_quiet_waits_for_the_publishes_replied_to_on_a_queue(tmp_path):
    transport = MemoryTransport()
    transport.declared.update({"q", "r"})
    transport.confirming.clear()  # the broker holds its confirms
    journal = await open_journal(tmp_path / "wm.db")
    outbox = Outbox(transport, journal, lambda: 1.0, lambda _: None, by_reply_queue=True)
    held = Outbound("q", b"{}", "j:s", "wm.p1", message_id="j:s:1", step_request=True)
    publishing = asyncio.ensure_future(outbox.publish([held]))
    await transport.holding.wait()
    await asyncio.wait_for(outbox.quiet({"wm.p2"}), 1)  # nothing replied to there
    waiting = asyncio.ensure_future(outbox.quiet({"wm.p1", "wm.p2"}))
    done, _ = await asyncio.wait([waiting], timeout=0.05)
    assert not done
    transport.confirming.set()
    await asyncio.wait_for(waiting, 1)
    await publishing
    await journal.close()
