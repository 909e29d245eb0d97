"""For random runs, the state rebuilt from a real journal (a SQLite file, a PostgreSQL database)
equals the live state, the partition each job was placed in included (and PostgreSQL answers
which partition a running tree is in without a replay)."""

from __future__ import annotations

import asyncio
import json
import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.pgdatabase import fresh_database, skip_without_postgres
from tests.unit.engine.helpers import workflows
from workflow_manager.config import Workflow
from workflow_manager.engine import (
    Dispatch,
    EngineState,
    JobArchived,
    JobFinished,
    JobSubmitted,
    PauseRequested,
    StepReplied,
    apply,
    replay,
)
from workflow_manager.journal import open_journal
from workflow_manager.recorder import record, to_event

FLOW = """
workflows:
  - name: w
    steps:
      - name: split
      - {name: fan, task: t, depends: [split]}
      - {name: left, depends: [split]}
      - {name: join, depends: [fan, left]}
      - name: title
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
          - {name: more, depends: [work]}
"""

# Each step of the run: which outstanding request to answer (as a fraction of the list), and how.
moves = st.lists(
    st.tuples(
        st.floats(0, 0.999),
        st.sampled_from(["ok", "ok", "ok", "error", "dup", "stray", "pause", "resume"]),
    ),
    max_size=60,
)
# Where each of up to 3 jobs was placed (None: by its id, as an unpartitioned manager does).
placements = st.lists(st.none() | st.integers(0, 7), min_size=3, max_size=3)


async def _run(
    path: Path | str,
    jobs: int,
    items: int,
    plan: list[tuple[float, str]],
    placed: list[int | None] | None = None,
) -> None:
    defs = workflows(FLOW)
    live = EngineState.from_workflows(defs)
    journal = await open_journal(path)
    wf = defs["w"]
    await journal.save_definitions(
        [(wf.content_hash, wf.name, wf.model_dump_json(by_alias=True, exclude_defaults=True))]
    )
    outstanding: list[Dispatch] = []
    answered: list[Dispatch] = []

    def feed(event) -> None:
        _, commands = apply(live, event)
        journal.append(record(event, commands, "wm").batch)
        outstanding.extend(c for c in commands if isinstance(c, Dispatch))
        for command in commands:  # finished jobs leave memory, as in the orchestrator
            if isinstance(command, JobFinished) and command.parent_id is None:
                apply(live, JobArchived(command.job_id, event.at))

    partitions = placed or [None] * jobs
    for n in range(jobs):
        job_id = str(uuid.UUID(int=n + 1))
        feed(
            JobSubmitted(
                job_id,
                "w",
                {"n": n},
                float(n),
                definition=wf.content_hash,
                partition=partitions[n],
            )  # fmt: skip
        )
    clock = 100.0
    for fraction, how in plan:
        clock += 1
        if how in ("pause", "resume"):  # a job paused or resumed (refused when it cannot be)
            feed(
                PauseRequested(str(uuid.UUID(int=int(fraction * jobs) + 1)), how == "pause", clock)
            )
            continue
        if how == "stray" or not outstanding:
            feed(StepReplied(str(uuid.uuid4()), "work", b"{}", clock))
            continue
        if how == "dup" and answered:
            request = answered[int(fraction * len(answered))]
            feed(StepReplied(request.job_id, request.step, b'{"late": 1}', clock))
            continue
        request = outstanding.pop(int(fraction * len(outstanding)))
        answered.append(request)
        body = {"items": list(range(items))} if request.step == "split" else {request.step: 1}
        error = "boom" if how == "error" else None
        raw = json.dumps(body).encode()
        feed(StepReplied(request.job_id, request.step, raw, clock, error=error))
    await journal.close()

    journal = await open_journal(path)
    stored = await journal.definitions()
    rebuilt = EngineState.from_workflows(
        defs, [Workflow.model_validate_json(text) for _, text in stored.values()]
    )
    roots = await journal.running_roots()
    replay(rebuilt, map(to_event, await journal.replay_rows(roots)))
    found = await journal.placements(roots)
    rows = [await journal.job(str(uuid.UUID(int=n + 1))) for n in range(jobs)]
    await journal.close()
    assert rebuilt.jobs == live.jobs  # Job.partition included
    if isinstance(path, str):  # PostgreSQL keeps each tree's partition in its jobs row
        wanted = {root: live.jobs[root].partition for root in roots}
        assert found == {root: p for root, p in wanted.items() if p is not None}
        assert [row.partition for row in rows if row] == [
            partitions[n] for n, row in enumerate(rows) if row
        ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.integers(1, 3), items=st.integers(0, 3), plan=moves, placed=placements)
def test_state_rebuilt_from_the_journal_equals_the_live_state(jobs, items, plan, placed):
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(Path(tmp) / "wm.db", jobs, items, plan, placed))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.integers(1, 3), items=st.integers(0, 3), plan=moves, placed=placements)
def test_state_rebuilt_from_a_postgresql_journal_equals_the_live_state(jobs, items, plan, placed):
    skip_without_postgres()
    with fresh_database() as url:
        asyncio.run(_run(url, jobs, items, plan, placed))
