"""A step's own `fairness`: its dispatches waiting for its concurrency or rate take turns by a
key read over the step's input and the job's metadata; a share that cannot be read fails it."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.unit.engine.helpers import of_type
from tests.unit.engine.test_concurrency import Run, ids
from tests.unit.engine.test_step_rates import Clock
from workflow_manager.engine import (
    Dispatch,
    JobFinished,
    JobStatus,
    JobSubmitted,
    StepReplied,
    StepStatus,
    replay,
)
from workflow_manager.engine.fairness import FairShare
from workflow_manager.engine.fairshares import step_share

# One job's rows, each a child: the step takes turns by the row's region (its input).
BY_REGION = """
workflows:
  - name: w
    steps:
      - {name: fan, task: t}
    tasks:
      - name: t
        itemListKey: rows
        steps:
          - name: work
            queue: q
            concurrency: 2
            fairness: {key: row.region, weight: row.weight}
"""

# Tenants by metadata; the workflow's own fairness (by payload) orders nothing here.
BY_TENANT = """
workflows:
  - name: w
    fairness: {key: ignored}
    steps:
      - {name: fan, task: t}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - {name: work, queue: q, concurrency: 2, fairness: {key: meta.tenant}}
"""

RATED = """
workflows:
  - name: w
    steps:
      - name: call
        rate: {limit: 1, per: 10}
        fairness: {key: region}
"""


def _dispatched(commands: list) -> list[Dispatch]:
    return [c for c in commands if isinstance(c, Dispatch)]


def _region(dispatch: Dispatch) -> str:
    return str(dispatch.body["row"]["region"])


def _rows(*groups: tuple[str, int, object]) -> list[dict]:
    """`count` rows of each (region, count, weight), one region after the other."""
    rows = []
    for region, count, weight in groups:
        rows += [{"region": region, "weight": weight} for _ in range(count)]
    return rows


def _serve(run: Run, out: list[Dispatch], replies: int) -> list[Dispatch]:
    """Answer the oldest request `replies` times; the requests released meanwhile."""
    released = []
    for _ in range(replies):
        done = out.pop(0)
        more = _dispatched(run.do(StepReplied(done.job_id, "work", b"{}", run.tick())))
        released += more
        out += more
    return released


def test_the_regions_of_one_job_take_turns_by_the_step_input():
    run = Run(BY_REGION)
    (job,) = ids(1)
    # 40 eu rows first, then 40 us rows: without the step's key, eu would go first.
    out = _dispatched(run.submit(job, {"rows": _rows(("eu", 40, 1), ("us", 40, 1))}))
    assert len(out) == 2
    order = [_region(d) for d in _serve(run, out, 20)]
    assert Counter(order) == {"eu": 10, "us": 10}
    # The journal's events rebuild the same waiting lines.
    assert replay(run.fresh(), run.events).gates == run.state.gates


def test_a_region_of_weight_two_takes_two_turns_per_round():
    run = Run(BY_REGION)
    (job,) = ids(1)
    out = _dispatched(run.submit(job, {"rows": _rows(("eu", 40, 2), ("us", 40, 1))}))
    counts = Counter(_region(d) for d in _serve(run, out, 30))
    # 2:1 (one weight: 15 each); the first turn goes by where each region joined the line.
    assert abs(counts["eu"] - 20) <= 1 and counts["eu"] + counts["us"] == 30


def test_another_tenants_first_child_goes_at_the_next_free_slot():
    run = Run(BY_TENANT)
    a, b = ids(2)
    sent = _dispatched(
        run.do(JobSubmitted(a, "w", {"items": list(range(1000))}, run.tick(), meta={"tenant": "a"}))
    )
    assert len(sent) == 2  # the rest of a's 1,000 children wait for the step's two slots
    run.do(JobSubmitted(b, "w", {"items": [0]}, run.tick(), meta={"tenant": "b"}))
    (released,) = _dispatched(run.do(StepReplied(sent[0].job_id, "work", b"{}", run.tick())))
    assert run.state.jobs[released.job_id].root_id == b


def test_the_share_is_read_over_the_input_and_metadata():
    run = Run(BY_TENANT)
    (a,) = ids(1)
    run.do(JobSubmitted(a, "w", {"items": [0, 1, 2]}, run.tick(), meta={"tenant": "a"}))
    child = next(job for job in run.state.jobs.values() if job.parent is not None)
    assert step_share(run.state, child, child.steps["work"]) == FairShare('"a"', 1.0)
    root = run.state.jobs[a]
    assert root.share.group == "null"  # the workflow's key finds nothing in the payload


def test_a_rated_step_takes_turns_across_its_keys():
    clock = Clock(RATED)
    clock.submit("a0", {"region": "a"})
    for i in range(1, 4):
        clock.submit(f"a{i}", {"region": "a"})
    clock.submit("b1", {"region": "b"})
    clock.at(25.0)
    assert [job for _, job, _ in clock.sent] == ["a0", "b1", "a1"]


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (
            "lots",
            "step 'work': fairness weight 'row.weight' gave \"lots\"; it must be a number "
            "from 0.001 to 1000",
        ),
        (
            0,
            "step 'work': fairness weight 'row.weight' gave 0; it must be a number from "
            "0.001 to 1000",
        ),
    ],
)
def test_a_weight_that_cannot_be_read_fails_the_step_saying_why(weight, message):
    run = Run(BY_REGION)
    (job,) = ids(1)
    commands = run.submit(job, {"rows": [{"region": "eu", "weight": weight}]})
    assert not _dispatched(commands)
    (child,) = [j for j in run.state.jobs.values() if j.parent is not None]
    assert child.steps["work"].status is StepStatus.FAILED
    assert child.steps["work"].error == message
    assert child.status is JobStatus.FAILED
    assert not run.state.gates["w:t:work"].holders  # it took no slot


def test_a_key_that_cannot_be_evaluated_fails_the_step():
    run = Run(BY_REGION.replace("key: row.region", "key: abs(row.region)"))
    (job,) = ids(1)
    commands = run.submit(job, {"rows": [{"region": "eu", "weight": 1}]})
    assert not _dispatched(commands)
    (child,) = [j for j in run.state.jobs.values() if j.parent is not None]
    error = child.steps["work"].error or ""
    assert error.startswith("step 'work': fairness key 'abs(row.region)' cannot be evaluated")
    assert of_type(commands, JobFinished)  # the child ended failed
