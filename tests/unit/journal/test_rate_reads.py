"""The recent step requests recovery feeds rate limits: read on SQLite and PostgreSQL alike,
walking back from the end of the log a page at a time."""

from __future__ import annotations

from tests.unit.journal.helpers import T0, dispatched, replied
from workflow_manager.engine import RateStart
from workflow_manager.journal import Batch, Journal, ratereads
from workflow_manager.ratehistory import rate_start


async def test_dispatched_rows_of_the_named_steps_since_a_time_oldest_first(
    journal: Journal,
) -> None:
    meta = {"queue": "call", "cid": "j2:call", "headers": {"x-workflow": "w", "x-meta": '{"t":1}'}}
    rows = [
        dispatched("j0", "m0", step="call", at=T0 - 5),  # before the window
        dispatched("j1", "m1", step="call", at=T0 + 1),
        dispatched("j1", "m2", step="other", at=T0 + 2),  # a step without a rate
        replied("j1", step="call", at=T0 + 3),
        dispatched("j2", "m3", step="call", attempt=2, at=T0 + 4, body=b'{"a":1}', meta=meta),
    ]
    await journal.append(Batch(events=rows))
    found = await journal.dispatched_since({"call"}, T0)
    assert [(row.job_id, row.at) for row in found] == [("j1", T0 + 1), ("j2", T0 + 4)]
    assert rate_start(found[1]) == RateStart(
        "w", "call", "call", "j2", 2, {"a": 1}, {"t": 1}, T0 + 4
    )
    assert rate_start(found[0]) is None  # no workflow header: nothing to count it under
    assert await journal.dispatched_since(set(), T0) == []


async def test_the_read_walks_back_page_by_page_and_stops_before_the_window(
    journal: Journal, monkeypatch
) -> None:
    monkeypatch.setattr(ratereads, "PAGE", 2)
    rows = [dispatched(f"j{i}", f"m{i}", step="call", at=T0 + i) for i in range(7)]
    await journal.append(Batch(events=rows))
    found = await journal.dispatched_since({"call"}, T0 + 2)
    assert [row.job_id for row in found] == ["j2", "j3", "j4", "j5", "j6"]
