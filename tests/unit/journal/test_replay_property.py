"""For random runs, the state rebuilt from a real journal (a SQLite file, a PostgreSQL database)
equals the live state."""

from __future__ import annotations

import asyncio
import json
import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manager.config import Workflow
from manager.engine import (
    Dispatch,
    EngineState,
    JobArchived,
    JobFinished,
    JobSubmitted,
    StepReplied,
    apply,
    replay,
)
from manager.journal import open_journal
from manager.recorder import record, to_event
from tests.pgdatabase import fresh_database, skip_without_postgres
from tests.unit.engine.helpers import workflows

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
    st.tuples(st.floats(0, 0.999), st.sampled_from(["ok", "ok", "ok", "error", "dup", "stray"])),
    max_size=60,
)


async def _run(path: Path | str, jobs: int, items: int, plan: list[tuple[float, str]]) -> None:
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

    for n in range(jobs):
        job_id = str(uuid.UUID(int=n + 1))
        feed(JobSubmitted(job_id, "w", {"n": n}, float(n), definition=wf.content_hash))
    clock = 100.0
    for fraction, how in plan:
        clock += 1
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
    replay(rebuilt, map(to_event, await journal.replay_rows(await journal.running_roots())))
    await journal.close()
    assert rebuilt.jobs == live.jobs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.integers(1, 3), items=st.integers(0, 3), plan=moves)
def test_state_rebuilt_from_the_journal_equals_the_live_state(jobs, items, plan):
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(Path(tmp) / "wm.db", jobs, items, plan))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.integers(1, 3), items=st.integers(0, 3), plan=moves)
def test_state_rebuilt_from_a_postgresql_journal_equals_the_live_state(jobs, items, plan):
    skip_without_postgres()
    with fresh_database() as url:
        asyncio.run(_run(url, jobs, items, plan))
