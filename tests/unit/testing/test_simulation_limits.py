"""A simulation of a file with `limits:` applies them, as `serve` does."""

from __future__ import annotations

from workflow_manager.testing import Simulation

NESTED = """
limits:
  - {name: one-at-a-time, limit: 1}
workflows:
  - name: w
    steps: [{name: work}]
"""


async def test_simulation_load_reads_the_files_limits(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(NESTED)
    sim = Simulation.load(path)
    order: list[int] = []
    sim.serve("work", lambda data: order.append(data["i"]) or {})
    first = await sim.start("w", {"i": 1})
    second = await sim.start("w", {"i": 2})
    assert sim.job(second).status == "queued"
    await sim.run_until_idle()
    assert [sim.job(first).status, sim.job(second).status] == ["completed", "completed"]
    assert order == [1, 2]
    assert "job.queued" in [event.type for event in sim.events]
