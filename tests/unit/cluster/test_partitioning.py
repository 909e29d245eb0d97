"""Partitions of job ids and hand-over messages: pure functions, every manager agrees."""

from __future__ import annotations

import itertools
import uuid

import pytest

from manager.cluster.handoff import SIGNAL, TRIGGER, handed_over, handoff_kind
from manager.cluster.partitioning import Partitioning, partition_queue
from manager.transport import Delivery


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
