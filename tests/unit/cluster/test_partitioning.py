"""Partitions of job ids and hand-over messages: pure functions, every manager agrees."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from workflow_manager.cluster.handoff import SIGNAL, TRIGGER, handed_over, handoff_kind
from workflow_manager.cluster.ownership import Ownership
from workflow_manager.cluster.partitioning import Partitioning, partition_queue
from workflow_manager.cluster.view import UNPARTITIONED, Lease, Member, cluster_json
from workflow_manager.errors import FencedOut
from workflow_manager.journal.writer import _Pending, _segments
from workflow_manager.transport import Delivery


@pytest.mark.parametrize(
    ("root_id", "count", "partition"),
    [
        ("3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10", 8, 7),
        ("3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10", 1, 0),
        ("00000000-0000-0000-0000-000000000000", 8, 1),
    ],
)
def test_a_job_tree_has_one_fixed_partition(root_id: str, count: int, partition: int) -> None:
    # Pinned values: changing the function would move running jobs between partitions.
    assert Partitioning("wm", count).of(root_id) == partition
    assert Partitioning("wm", count).reply_queue(root_id) == f"wm.p{partition}"


def test_partitions_spread_ids_over_all_queues() -> None:
    split = Partitioning("wm", 8)
    seen = {split.of(str(uuid.UUID(int=n))) for n in range(2000)}
    assert seen == set(range(8))
    assert split.queues() == [partition_queue("wm", k) for k in range(8)]


def test_a_new_id_is_drawn_in_an_owned_partition() -> None:
    split = Partitioning("wm", 8)
    counter = itertools.count()
    drawn = split.new_id_in({5}, lambda: str(uuid.UUID(int=next(counter))))
    assert drawn is not None and split.of(drawn) == 5
    assert split.new_id_in(set(), lambda: "never") is None


def test_a_handed_over_trigger_keeps_its_message_and_gets_its_job_id() -> None:
    delivery = Delivery("wm.jobs", b'{"n": 1}', None, "answers", {"workflow": "w"})
    message = handed_over(delivery, "wm.p3", TRIGGER, "job-1")
    assert (message.queue, message.body, message.correlation_id) == ("wm.p3", b'{"n": 1}', "job-1")
    assert message.reply_to == "answers" and message.headers["workflow"] == "w"
    assert message.message_id is None  # not journaled: the trigger is acked once confirmed
    back = Delivery("wm.p3", message.body, "job-1", "answers", message.headers)
    assert handoff_kind(back) == TRIGGER
    assert handoff_kind(Delivery("wm.p3", b"{}", None, None, {"x-handoff": SIGNAL.encode()})) == (
        SIGNAL
    )
    assert handoff_kind(Delivery("wm.p3", b"{}", "j:s", None, {})) is None


def test_the_cluster_view_groups_live_leases_by_manager() -> None:
    leases = [
        Lease(0, "a:1", 3, 2.5, 0.5),
        Lease(1, "b:2", 1, 2.0, 1.0),
        Lease(2, "a:1", 3, 2.9, 0.1),
        Lease(3, "gone:3", 2, -4.0, 7.0),  # expired: its owner no longer runs it
        Lease(4, None, 0, -1e9, None),
    ]
    members = [
        Member("a:1", "http://a:8080", 0.2),
        Member("b:2", None, 0.4),
        Member("c:3", "http://c:8080", 0.3),  # alive, holding nothing: a standby
    ]
    view = cluster_json(leases, members, "b:2")
    assert (view["partitions"], view["manager"]) == (5, "b:2")
    assert view["managers"] == [
        {"name": "a:1", "partitions": [0, 2], "lease_age_s": 0.5, "api_url": "http://a:8080"},
        {"name": "b:2", "partitions": [1], "lease_age_s": 1.0, "api_url": None},
        {"name": "c:3", "partitions": [], "lease_age_s": 0.3, "api_url": "http://c:8080"},
    ]
    assert [lease["owner"] for lease in view["leases"]] == ["a:1", "b:2", "a:1", "gone:3", None]
    assert UNPARTITIONED["partitions"] is None and UNPARTITIONED["managers"] == []


class _Cursor:
    """Answers the fence's lease query with the leases as the database has them."""

    def __init__(self, leases: dict[int, tuple[str, int]]) -> None:
        self.leases = leases
        self.asked: list[int] = []
        self.counted: list[tuple[str, int, int]] = []  # (owner, partition, epoch) per commit

    async def execute(self, sql: str, params: dict[str, Any]) -> None:
        self.asked = sorted(params["partitions"])
        held = zip(params["partitions"], params["epochs"], strict=True)
        self.counted += [(params["owner"], p, e) for p, e in sorted(held)]

    async def fetchall(self) -> list[tuple[int, str, int]]:
        return [(p, *self.leases[p]) for p in self.asked]


def _ownership(held: dict[int, int]) -> Ownership:
    table = SimpleNamespace(owner="me")  # the fence reads no more of it
    ownership = Ownership(table, Partitioning("wm", 8))  # type: ignore[arg-type]
    ownership.held = dict(held)
    return ownership


async def test_the_fence_checks_the_partitions_a_commit_was_placed_in() -> None:
    ownership = _ownership({3: 5})
    cursor = _Cursor({3: ("me", 5)})
    root = "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10"  # its id's partition is 7, not ours
    await ownership.fence(cursor, {3}, set())  # type: ignore[arg-type]
    assert cursor.asked == [3]
    assert cursor.counted == [("me", 3, 5)]  # the commit is counted at the epoch we hold
    with pytest.raises(FencedOut, match="partition 7"):
        await ownership.fence(cursor, set(), {root})  # type: ignore[arg-type]
    with pytest.raises(FencedOut, match="partition 6"):
        await ownership.fence(cursor, {3, 6}, set())  # type: ignore[arg-type]
    cursor.leases[3] = ("other", 6)  # taken over since
    with pytest.raises(FencedOut, match="taken over"):
        await ownership.fence(cursor, {3}, set())  # type: ignore[arg-type]


def test_a_group_commit_keeps_each_batchs_partition_for_the_fence() -> None:
    loop = asyncio.new_event_loop()
    try:
        pending = [
            _Pending(loop.create_future(), [], [], [], frozenset(), partition)
            for partition in (2, None, 5)
        ]
        (segment,) = _segments(pending)
    finally:
        loop.close()
    assert segment.placed == {2, 5}
    assert segment.unplaced == [pending[1]]  # its rows' top-level job ids say where it is
