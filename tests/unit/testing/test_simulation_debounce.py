"""A debounced workflow in the Simulation: triggers within the window return the window's job,
which (trailing) starts when virtual time reaches the window's end, with the last payload."""

from __future__ import annotations

from typing import Any

from workflow_manager.config import parse_workflows
from workflow_manager.testing import START, Simulation

TRAILING = """
workflows:
  - name: sync
    debounce: {key: order, period: 30, mode: trailing}
    steps: [{name: push}]
"""


async def test_trailing_triggers_make_one_job_that_runs_the_last_payload_after_the_period():
    sim = Simulation(parse_workflows(TRAILING))
    seen: list[dict[str, Any]] = []
    sim.serve("push", lambda data: seen.append(data) or {"pushed": data["v"]})
    first = await sim.start("sync", {"order": 1, "v": 0})
    for v in range(1, 4):
        await sim.advance(5)
        assert await sim.start("sync", {"order": 1, "v": v}) == first
    other = await sim.start("sync", {"order": 2, "v": 9})
    assert other != first
    await sim.advance(10)  # 25 s in: the window is still open
    assert sim.job(first).status == "scheduled" and seen == []
    await sim.advance(5)  # 30 s: it closes, the job runs with the last payload
    await sim.run_until_idle()
    job = sim.job(first)
    assert job.status == "completed" and job.result == {"pushed": 3}
    assert seen[0] == {"order": 1, "v": 3} and len(seen) == 2  # and order 2's own job
    assert job.started_at == START + 30
    # After the window a trigger opens a new one.
    assert await sim.start("sync", {"order": 1, "v": 4}) != first
