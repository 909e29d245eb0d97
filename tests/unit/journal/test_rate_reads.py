"""The recent step requests (and top-level job starts) recovery feeds rate limits: read on
SQLite and PostgreSQL alike, walking back from the end of the log a page at a time."""

from __future__ import annotations

from tests.unit.journal.helpers import T0, dispatched, event, replied, submitted
from workflow_manager.config import parse_workflows
from workflow_manager.engine import JobRateStart, RateStart
from workflow_manager.journal import Batch, EventKind, Journal, ratereads
from workflow_manager.ratehistory import rate_history, rate_start


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


async def test_first_job_starts_since_a_time_with_their_submissions(journal: Journal) -> None:
    def submission(job_id: str, workflow: str, at: float, meta: dict | None = None) -> object:
        fields = {"id": job_id, "workflow": workflow, **({"meta": meta} if meta else {})}
        return submitted(job_id, at=at, body=b'{"tenant": "a"}', meta=fields)

    rows = [
        submission("old", "w", T0 - 30),
        event(EventKind.STARTED, "old", at=T0 - 30),  # its first start, before the window
        submission("a", "w", T0 + 1, {"t": 1}),
        event(EventKind.STARTED, "a", at=T0 + 2),
        event(EventKind.STARTED, "old", at=T0 + 3),  # a retry: no first start
        submission("b", "other", T0 + 4),
        event(EventKind.STARTED, "b", at=T0 + 5),
        event(EventKind.STARTED, "a", at=T0 + 6),  # a's retry: its first start counts
        event(EventKind.STARTED, "nosub", at=T0 + 7),  # no submission row: left out
    ]
    await journal.append(Batch(events=rows))
    found = await journal.job_starts_since(T0)
    assert [(at, row.job_id) for at, row in found] == [(T0 + 2, "a"), (T0 + 5, "b")]
    workflows = parse_workflows(
        "workflows:\n  - name: w\n    rate: {limit: 1, per: 9.5}\n    steps: [{name: s}]\n"
        "  - name: other\n    steps: [{name: s}]\n"
    )
    history = await rate_history(journal, workflows.values(), T0 + 10)
    assert history.starts == ()
    assert history.jobs == (JobRateStart("w", "a", {"tenant": "a"}, {"t": 1}, T0 + 2),)
