"""A rate-limited step in the Simulation: the real engine spreads the requests over virtual
time, at most `limit` in any window of `per` seconds."""

from __future__ import annotations

from workflow_manager.config import parse_workflows
from workflow_manager.testing import START, Simulation

RATED = """
workflows:
  - name: notify
    steps: [{name: send, rate: {limit: 5, per: 10}}]
"""


async def test_a_rate_of_5_per_10s_spreads_12_jobs_over_three_windows():
    sim = Simulation(parse_workflows(RATED))
    sim.serve("send", lambda data: {"sent": data["i"]})
    jobs = [await sim.start("notify", {"i": i}) for i in range(12)]
    assert sim.job(jobs[5]).step("send").status == "throttled"
    await sim.run_until_idle()
    assert all(sim.job(job).status == "completed" for job in jobs)
    sent = [sim.job(job).step("send").attempts[0].sent_at for job in jobs]
    assert [at - START for at in sent] == [0.0] * 5 + [10.0] * 5 + [20.0] * 2
    assert "step.throttled" in [event.type for event in sim.events]
