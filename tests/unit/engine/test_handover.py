"""Handing job trees over to another manager (`JobsHandedOver`): memory lets go of everything
they hold, the other trees are untouched, and the next owner's replay of their journal brings
back exactly what was let go.

Property, on the runs of the control property (retries, timers, limits, unique keys, signals,
compensation): after handing a random set of top-level jobs over,

1. no job of their trees is left, nor a timer, a limit's slot or place, a unique key, or a
   compensation of theirs; the commands cancel exactly the timers that went;
2. every other job, and the timers of every other job, are as they were;
3. when the trees share nothing with the others (no limits, unique keys or schedule firings:
   with --partitions, keyed ones stay in one partition), replaying the events of the trees
   handed over into a fresh state gives them back as they were.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.unit.engine.helpers import JOB, OTHER_JOB
from tests.unit.engine.test_replay_control_property import Run, _drive, _fresh, workflows
from workflow_manager.config.models import Workflow
from workflow_manager.engine import (
    CancelTimer,
    EngineState,
    JobsHandedOver,
    JobsReleased,
    JobSubmitted,
    Subject,
    apply,
    replay,
)
from workflow_manager.engine import timers as timer_keys


def _root(state: EngineState, job_id: str) -> str:
    return state.jobs[job_id].root_id or job_id


def _trees(state: EngineState, roots: set[str]) -> set[str]:
    return {job_id for job_id in state.jobs if _root(state, job_id) in roots}


def _timer_job(key: str) -> str:
    parsed = timer_keys.parse(key)
    assert parsed is not None, key
    return parsed.job_id


def _isolated(run: Run) -> bool:
    """True when no job's course depended on another's (see the module's docstring, 3)."""
    wf = run.wf
    shared = wf.concurrency is not None or wf.unique is not None
    shared |= run.max_running_jobs is not None or bool(run.limits)
    shared |= any(getattr(step, "concurrency", None) for step in wf.steps)
    shared |= any(isinstance(e, JobSubmitted) and e.schedule for e in run.events)
    return not shared


def _check_hand_over(run: Run, roots: set[str]) -> None:
    state = run.state
    doomed = _trees(state, roots)
    kept = {
        job_id: copy.deepcopy(job) for job_id, job in state.jobs.items() if job_id not in doomed
    }
    before = {job_id: copy.deepcopy(state.jobs[job_id]) for job_id in doomed}
    timers = dict(state.timers)

    _, commands = apply(state, JobsHandedOver(tuple(sorted(roots)), run.tick()))

    assert not doomed & set(state.jobs)
    assert state.jobs == kept
    gone = {key for key in timers if _timer_job(key) in doomed}
    released = [JobsReleased(tuple(sorted(doomed)))] if doomed else []
    assert commands == [CancelTimer(key) for key in timers if key in gone] + released
    assert state.timers == {key: due for key, due in timers.items() if key not in gone}
    for slots in (*state.scopes.values(), *state.gates.values()):
        assert not {h.partition(":")[0] for h in slots.holders} & doomed
        assert not {rank[2].partition(":")[0] for rank in slots.waiting} & doomed
    assert not set(state.unique.values()) & doomed
    assert not set(state.compensating.values()) & doomed
    assert not state.paused & doomed
    assert not roots & state.gone.roots()

    if _isolated(run):
        # The next owner replays the trees' events (each event's Subject names its tree).
        theirs = [
            e
            for e, cs in zip(run.events, run.commands, strict=True)
            if cs and isinstance(cs[0], Subject) and cs[0].root_id in roots
        ]
        again = replay(_fresh(run.wf, run.max_running_jobs, run.limits), theirs)
        assert {j: again.jobs[j] for j in doomed} == before
        event("checked against the next owner's replay")


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(wf=workflows(), data=st.data())
def test_handing_trees_over_forgets_them_and_nothing_else(wf: Workflow, data):
    _hand_some_over(wf, data)


def _unshared(wf: Workflow) -> bool:
    return wf.concurrency is None and wf.unique is None


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(wf=workflows().filter(_unshared), data=st.data())
def test_the_next_owners_replay_brings_the_trees_back(wf: Workflow, data):
    """Mostly runs whose trees share nothing, so that check 3 applies."""
    _hand_some_over(wf, data)


def _hand_some_over(wf: Workflow, data: st.DataObject) -> None:
    run = _drive(data.draw, wf)
    tops = sorted(j for j, job in run.state.jobs.items() if job.parent is None)
    if not tops:
        return
    roots = set(data.draw(st.lists(st.sampled_from(tops), unique=True, min_size=1)))
    event(f"trees handed over: {len(roots)} of {len(tops)}")
    _check_hand_over(run, roots)


def test_unknown_and_child_ids_are_skipped():
    wf = Workflow.model_validate({"name": "w", "steps": [{"name": "a"}]})
    state = EngineState.from_workflows({"w": wf})
    apply(state, JobSubmitted(JOB, "w", {}, 1.0))
    _, commands = apply(state, JobsHandedOver((OTHER_JOB, "not-a-job"), 2.0))
    assert commands == [] and set(state.jobs) == {JOB}
