"""Test a workflow without a broker or a clock: `workflow_manager.testing`.

`Simulation` runs a workflow file in-process with the real engine and the real validation;
its steps are served by Python functions (the handlers a pyworker `Worker` registers, or any
callable per queue or step name), its HTTP steps by a callable, and its time is virtual:
delays, retry backoffs, timeouts, schedules and `wait` timeouts pass instantly and in a fixed
order (`advance(seconds)`, `run_until_idle()`). Signals, cancel and retry are calls; a run
shows each job's status, result and every step's attempts (`job(id)`), and its run events.

    from workflow_manager.testing import NoReply, Simulation

    async def test_counts():
        sim = Simulation.load("workflows.yaml")
        sim.serve("count", lambda data: {"n": len(data["text"].split())})
        job_id = await sim.start("counting", {"text": "a b c"})
        await sim.run_until_idle()
        job = sim.job(job_id)
        assert job.status == "completed" and job.result == {"n": 3}
        assert len(job.step("count").attempts) == 1

`workflow-manager test WORKFLOW_FILE --fixtures FILE` runs the same from the command line,
with the steps' answers given in a file (`workflow_manager.testing.fixtures`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_manager.lazymodules import names_on_first_use

if TYPE_CHECKING:
    from workflow_manager.testing.handlers import NoReply
    from workflow_manager.testing.simulation import (
        START,
        Simulation,
        SimulationError,
        UnservedStep,
    )
    from workflow_manager.testing.views import Attempt, JobView, StepView

__all__ = [
    "Simulation",
    "SimulationError",
    "UnservedStep",
    "NoReply",
    "JobView",
    "StepView",
    "Attempt",
    "START",
]

# Loaded on first use: the command line builds its parser from `command`, and a manager need
# not load the simulation for that.
__getattr__ = names_on_first_use(
    __name__,
    {
        "Simulation": "workflow_manager.testing.simulation",
        "SimulationError": "workflow_manager.testing.simulation",
        "UnservedStep": "workflow_manager.testing.simulation",
        "START": "workflow_manager.testing.simulation",
        "NoReply": "workflow_manager.testing.handlers",
        "JobView": "workflow_manager.testing.views",
        "StepView": "workflow_manager.testing.views",
        "Attempt": "workflow_manager.testing.views",
    },
)
