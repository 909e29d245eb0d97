"""A bulk across several managers: its parts' ids, the jobs split by partition, and where the
whole bulk stands from its parts' views."""

from __future__ import annotations

from typing import Any

import pytest

from workflow_manager.bulkviews import summed_view
from workflow_manager.cluster.bulkparts import MatchedJob, oldest_first, part_id, part_ids, split
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.engine.bulk import bulk_journal_id, let_go
from workflow_manager.engine.state import BulkRun, EngineState

BULK = "6f1c2a9e-1d4b-4c55-9a0e-2b7d3c4e5f60"


@pytest.mark.parametrize("count", [1, 4, 8, 64])
def test_each_part_is_filed_in_its_partition_and_named_alike_everywhere(count: int) -> None:
    partitioning = Partitioning("wm", count)
    parts = part_ids(BULK, partitioning)
    assert sorted(parts) == list(range(count))
    for partition, pid in parts.items():
        assert partitioning.of(bulk_journal_id(pid)) == partition
        assert part_id(BULK, partition, Partitioning("another queue", count)) == pid
    assert len(set(parts.values())) == count  # one id per part
    assert part_ids("another bulk", partitioning) != parts


def test_split_keeps_each_job_once_oldest_first_by_partition() -> None:
    matched = [
        MatchedJob("c", 1, 30.0),
        MatchedJob("a", 0, 10.0),
        MatchedJob("b", 1, 10.0),
        MatchedJob("a", 0, 10.0),  # in memory and in the journal: once
        MatchedJob("d", 3, 5.0),
        MatchedJob("e", 0, 10.0),
    ]
    assert split(matched) == {0: ("a", "e"), 1: ("b", "c"), 3: ("d",)}
    assert list(split(matched)) == [0, 1, 3]
    assert [job.id for job in oldest_first(matched)] == ["d", "a", "b", "e", "c"]
    assert split([]) == {}


def _part(
    total: int, done: int, changed: int, errors: list[dict[str, str]], finished_at: str | None
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": "part", "action": "cancel", "status": "finished" if finished_at else "running",
        "total": total, "done": done, "changed": changed, "refused": len(errors),
        "errors": errors, "filter": {"workflow": "w"}, "started_at": "2026-11-28T10:00:01Z",
    }  # fmt: skip
    if finished_at:
        view["finished_at"] = finished_at
    return view


def test_a_bulk_stands_where_its_parts_do_summed() -> None:
    error = {"job": "x", "reason": "job x is already cancelled"}
    one = _part(10, 10, 9, [error], "2026-11-28T10:00:05Z")
    two = {**_part(5, 2, 2, [], None), "started_at": "2026-11-28T10:00:00Z"}
    view = summed_view(BULK, [one, two])
    assert view == {
        "id": BULK, "action": "cancel", "status": "running", "total": 15, "done": 12,
        "changed": 11, "refused": 1, "errors": [error], "filter": {"workflow": "w"},
        "started_at": "2026-11-28T10:00:00Z",
    }  # fmt: skip
    done = summed_view(BULK, [one, _part(5, 5, 5, [], "2026-11-28T10:00:09Z")])
    assert done is not None
    assert (done["status"], done["finished_at"], done["done"]) == (
        "finished", "2026-11-28T10:00:09Z", 15,
    )  # fmt: skip
    assert summed_view(BULK, []) is None


def test_bulks_of_partitions_handed_over_leave_memory() -> None:
    state = EngineState.from_workflows({})
    for bulk_id in ("kept", "gone"):
        state.bulks[bulk_id] = BulkRun(bulk_id, "cancel", ("j",), 1, 0.0, None, None)
    let_go(state, ["some-job", bulk_journal_id("gone")])
    assert list(state.bulks) == ["kept"]
