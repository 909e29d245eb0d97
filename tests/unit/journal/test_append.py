"""Appending: order and seq, group commit, sent marks, job upserts, refused batches."""

from __future__ import annotations

import asyncio

import pytest

from tests.unit.journal.helpers import T0, dispatched, event, job, replied, submitted
from workflow_manager.errors import BatchRefused
from workflow_manager.journal import Batch, EventRow


async def test_rows_come_back_in_append_order_with_seq(journal):
    futures = [
        journal.append(Batch(events=[submitted("a"), replied("a")])),
        journal.append(Batch(events=[submitted("b")])),
        journal.append(Batch(events=[replied("a", at=T0 + 1)])),
    ]
    await asyncio.gather(*futures)

    rows = await journal.events_of("a") + await journal.events_of("b")
    by_seq = sorted(rows, key=lambda row: row.seq)
    assert [(row.seq, row.kind, row.job_id) for row in by_seq] == [
        (1, "submitted", "a"),
        (2, "replied", "a"),
        (3, "submitted", "b"),
        (4, "replied", "a"),
    ]


async def test_every_field_round_trips(journal):
    row = EventRow(
        at=T0 + 0.125,
        kind="replied",
        job_id="a",
        root_id="r",
        step="count",
        attempt=3,
        body=b"\x00\xffnot json",
        meta={"reason": "late", "nested": {"n": [1, 2.5, None]}, "word": "ü"},
        msg_id="m1",
        sent_at=T0 + 2,
    )
    await journal.append(Batch(events=[row, event("ignored")]))

    (stored,) = await journal.events_of("a")
    assert stored == EventRow(**{**_fields(row), "seq": 1})
    assert isinstance(stored.body, bytes)


def _fields(row: EventRow) -> dict:
    return {name: getattr(row, name) for name in row.__slots__}


async def test_group_commit_writes_many_batches_per_commit(journal):
    producers, batches_each, rows_each = 50, 40, 10

    async def produce(p: int) -> None:
        for b in range(batches_each):
            rows = [replied(f"job{p}", at=T0 + b) for _ in range(rows_each)]
            await journal.append(Batch(events=rows))

    await asyncio.gather(*(produce(p) for p in range(producers)))

    batches = producers * batches_each
    assert len(await journal.replay_rows([f"job{p}" for p in range(producers)])) == 20_000
    # Each commit takes every batch queued meanwhile: about one per producer.
    assert journal.commits <= batches / 10


async def test_batches_queued_before_the_writer_runs_share_one_commit(journal):
    futures = [journal.append(Batch(events=[replied("a")] * 10)) for _ in range(2_000)]
    await asyncio.gather(*futures)

    assert journal.commits == 1
    seqs = [row.seq for row in await journal.events_of("a")]
    assert seqs == list(range(1, 20_001))


async def test_empty_batches_and_flush_resolve_without_commits(journal):
    await journal.append(Batch())
    await journal.flush()
    assert journal.commits == 0


async def test_outbound_rows_stay_pending_until_marked_sent(journal):
    await journal.append(
        Batch(events=[submitted("a"), dispatched("a", "m1"), dispatched("a", "m2")])
    )
    assert [row.msg_id for row in await journal.pending_outbound()] == ["m1", "m2"]

    await journal.append(Batch(sent=[("m2", T0 + 5)]))

    assert [row.msg_id for row in await journal.pending_outbound()] == ["m1"]
    sent = {row.msg_id: row.sent_at for row in await journal.events_of("a")}
    assert sent == {None: None, "m1": None, "m2": T0 + 5}


async def test_a_sent_mark_covers_every_row_of_that_message(journal):
    notice = event("notified", "a", msg_id="n1")
    await journal.append(Batch(events=[notice, notice]))
    await journal.append(Batch(sent=[("n1", T0 + 1)]))

    assert await journal.pending_outbound() == []
    assert [row.sent_at for row in await journal.events_of("a")] == [T0 + 1, T0 + 1]


async def test_a_repeat_queued_after_a_mark_stays_pending_in_the_same_commit(journal):
    await journal.append(Batch(events=[event("notified", "a", msg_id="n1")]))
    mark = journal.append(Batch(sent=[("n1", T0 + 1)]))
    repeat = journal.append(Batch(events=[event("notified", "a", msg_id="n1", at=T0 + 2)]))
    await asyncio.gather(mark, repeat)

    (pending,) = await journal.pending_outbound()
    assert (pending.seq, pending.at) == (2, T0 + 2)


async def test_job_rows_are_inserted_then_updated(journal):
    await journal.append(Batch(jobs=[job("a", payload={"text": "x"})]))
    ended = job(
        "a",
        status="completed",
        finished_at=T0 + 9,
        payload={"ignored": True},
        result={"words": 3},
        snapshot={"steps": {"s": "completed"}},
    )
    await journal.append(Batch(jobs=[ended]))

    stored = await journal.job("a")
    assert stored.status == "completed"
    assert stored.finished_at == T0 + 9
    assert stored.result == {"words": 3}
    assert stored.snapshot == {"steps": {"s": "completed"}}
    assert stored.error is None
    assert stored.payload == {"text": "x"}  # the start's payload stays
    assert await journal.job("missing") is None


async def test_a_batch_that_is_not_json_is_refused_alone(journal):
    bad = journal.append(Batch(events=[event("ignored", "a", meta={"when": object()})]))
    good = journal.append(Batch(events=[submitted("a")]))

    with pytest.raises(BatchRefused, match="not JSON-serialisable"):
        await bad
    await good
    assert journal.failure is None
    assert [row.kind for row in await journal.events_of("a")] == ["submitted"]


async def test_a_batch_nested_too_deeply_is_refused_alone(journal):
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    bad = journal.append(Batch(events=[event("ignored", "a", meta={"deep": deep})]))

    with pytest.raises(BatchRefused, match="nested too deeply"):
        await bad
    await journal.append(Batch(events=[submitted("a")]))
    assert journal.failure is None


async def test_a_cancelled_wait_does_not_cancel_the_write(journal):
    future = journal.append(Batch(events=[submitted("a")]))
    future.cancel()
    await journal.flush()

    assert [row.kind for row in await journal.events_of("a")] == ["submitted"]
    await journal.append(Batch(events=[replied("a")]))
    assert len(await journal.events_of("a")) == 2


async def test_a_lazy_batch_waits_for_company_and_keeps_its_place(journal):
    await journal.append(Batch(events=[submitted("a"), dispatched("a", "m1")]))
    commits = journal.commits
    mark = journal.append(Batch(sent=[("m1", T0 + 5)]), lazy=True)
    # A later batch repeats m1: the mark was queued first, so it covers only the first row.
    await journal.append(Batch(events=[dispatched("a", "m1", at=T0 + 6)]))
    assert mark.done()  # written in the same commit as the batch after it
    assert journal.commits == commits + 1
    assert [row.sent_at for row in await journal.events_of("a") if row.msg_id] == [T0 + 5, None]


async def test_a_lazy_batch_alone_is_written_within_the_delay(journal):
    await journal.append(Batch(events=[dispatched("a", "m1")]))
    commits = journal.commits
    # Nothing else comes: the writer's own timer writes it (without it, this would hang).
    await journal.append(Batch(sent=[("m1", T0 + 5)]), lazy=True)
    assert journal.commits == commits + 1
    assert await journal.pending_outbound() == []


async def test_flush_and_close_write_lazy_batches_at_once(journal):
    await journal.append(Batch(events=[dispatched("a", "m1"), dispatched("a", "m2")]))
    first = journal.append(Batch(sent=[("m1", T0)]), lazy=True)
    await journal.flush()
    assert first.done() and [row.msg_id for row in await journal.pending_outbound()] == ["m2"]
    second = journal.append(Batch(sent=[("m2", T0)]), lazy=True)
    await journal.close()
    assert second.done() and second.exception() is None
