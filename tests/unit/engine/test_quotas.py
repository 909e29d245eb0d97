"""Quotas: with several managers, a partition uses only the quota of a cluster-wide limit it was
granted (`QuotasSet`), never takes back work under way, and says where it stands
(`QuotasUsed`)."""

from __future__ import annotations

import uuid

from tests.unit.engine.helpers import dispatches, fire, of_type, reply, workflows
from workflow_manager.engine import (
    EngineState,
    JobStatus,
    JobSubmitted,
    Quota,
    QuotasSet,
    QuotasUsed,
    QuotaUse,
    StartTimer,
    StepStatus,
    StepThrottled,
    apply,
)
from workflow_manager.engine.quotas import base_name, hashed_partition, tree_partition

GATED = """
workflows:
  - name: w
    steps:
      - name: work
        concurrency: 3
"""
RATED = """
workflows:
  - name: w
    steps:
      - name: work
        rate: {limit: 10, per: 1}
"""
FREE = """
workflows:
  - name: w
    steps:
      - name: work
"""
P = 4
GATE = "step/w:w:work"


def partitioned(text: str, max_running_jobs: int | None = None) -> EngineState:
    return EngineState.from_workflows(
        workflows(text), max_running_jobs=max_running_jobs, partitions=P
    )


def job_ids(partition: int, n: int) -> list[str]:
    """`n` job ids placed by their id in `partition`."""
    found = []
    for i in range(1000):
        job_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"quota-{i}"))
        if hashed_partition(job_id, P) == partition:
            found.append(job_id)
        if len(found) == n:
            return found
    raise AssertionError("not enough ids")


def submit_all(state: EngineState, ids: list[str], at: float = 1.0) -> list:
    commands = []
    for job_id in ids:
        commands += apply(state, JobSubmitted(job_id, "w", {}, at))[1]
    return commands


def grant(state: EngineState, limit: str, partition: int, quota: int, at: float = 2.0) -> list:
    return apply(state, QuotasSet((Quota(limit, partition, quota),), at))[1]


def uses(commands: list) -> dict[tuple[str, int], QuotaUse]:
    (answer,) = of_type(commands, QuotasUsed)
    return {(use.limit, use.partition): use for use in answer.uses}


def fire_releases(state: EngineState, commands: list, at: float) -> list:
    fired = []
    for timer in of_type(commands, StartTimer):
        fired += fire(state, timer.key, at)
    return fired


def test_a_partition_without_a_quota_holds_its_steps_and_says_so():
    state = partitioned(GATED)
    commands = submit_all(state, job_ids(1, 2))
    assert dispatches(commands) == []
    assert not of_type(commands, StartTimer)
    answer = uses(apply(state, QuotasSet((), 2.0))[1])
    assert answer[GATE, 1] == QuotaUse(GATE, 1, 3, 0, 0, 2)


def test_a_granted_quota_releases_that_many_and_no_more():
    state = partitioned(GATED)
    ids = job_ids(2, 3)
    submit_all(state, ids)
    commands = grant(state, GATE, 2, 2)
    assert len(of_type(commands, StartTimer)) == 2
    sent = dispatches(fire_releases(state, commands, 3.0))
    assert len(sent) == 2
    assert uses(commands)[GATE, 2] == QuotaUse(GATE, 2, 3, 2, 2, 1)


def test_a_quota_is_capped_by_the_configured_limit():
    state = partitioned(GATED)
    submit_all(state, job_ids(0, 5))
    commands = grant(state, GATE, 0, 50)
    assert len(of_type(commands, StartTimer)) == 3  # concurrency: 3 still holds


def test_a_lowered_quota_lets_work_under_way_finish_and_starts_nothing_more():
    state = partitioned(GATED)
    ids = job_ids(3, 3)
    submit_all(state, ids)
    fire_releases(state, grant(state, GATE, 3, 2), 3.0)
    lowered = uses(grant(state, GATE, 3, 1, at=4.0))
    assert lowered[GATE, 3] == QuotaUse(GATE, 3, 3, 1, 2, 1)  # two out, over the new quota
    running = [j for j in ids if state.jobs[j].steps["work"].status is StepStatus.RUNNING]
    commands = reply(state, f"{running[0]}:work", {}, at=5.0)
    assert not of_type(commands, StartTimer)  # one still out: the quota of 1 is used
    commands = reply(state, f"{running[1]}:work", {}, at=6.0)
    assert len(of_type(commands, StartTimer)) == 1  # under the quota: the third goes


def test_partitions_count_apart():
    state = partitioned(GATED)
    submit_all(state, job_ids(0, 2) + job_ids(1, 2))
    commands = grant(state, GATE, 0, 3)
    assert len(of_type(commands, StartTimer)) == 2  # partition 1's jobs still wait
    answer = uses(commands)
    assert answer[GATE, 1].waiting == 2 and answer[GATE, 1].quota == 0


def test_max_running_jobs_is_a_quota_per_partition():
    state = partitioned(FREE, max_running_jobs=10)
    ids = job_ids(1, 2)
    commands = submit_all(state, ids)
    assert all(state.jobs[j].status is JobStatus.QUEUED for j in ids)
    assert dispatches(commands) == []
    granted = grant(state, "jobs/all", 1, 1)
    fire_releases(state, granted, 3.0)
    statuses = sorted(state.jobs[j].status.value for j in ids)
    assert statuses == ["queued", "running"]
    assert uses(granted)["jobs/all", 1] == QuotaUse("jobs/all", 1, 10, 1, 1, 1)


def test_a_rate_without_a_quota_waits_with_no_time_then_goes_when_granted():
    state = partitioned(RATED)
    (job_id,) = job_ids(2, 1)
    commands = submit_all(state, [job_id])
    (throttled,) = of_type(commands, StepThrottled)
    assert throttled.until is None
    assert not of_type(commands, StartTimer)
    name = "rate/step:w:w:work:null"
    granted = grant(state, name, 2, 5)
    (timer,) = of_type(granted, StartTimer)
    assert dispatches(fire(state, timer.key, 2.0))
    assert uses(grant(state, name, 2, 5, at=2.5))[name, 2].used == 1


def test_running_forgets_the_quotas_of_partitions_handed_over():
    state = partitioned(GATED)
    submit_all(state, job_ids(0, 1))
    grant(state, GATE, 0, 2)
    assert state.quotas is not None and state.quotas.granted
    apply(state, QuotasSet((), 3.0, running=(1, 2)))
    assert state.quotas.granted == {}


def test_one_manager_has_no_quotas():
    state = EngineState.from_workflows(workflows(GATED))
    submit_all(state, job_ids(0, 2))
    assert len(state.gates["w:w:work"].holders) == 2  # the whole limit, named as configured
    assert of_type(apply(state, QuotasSet((), 2.0))[1], QuotasUsed) == [QuotasUsed(())]


def test_names_and_partitions():
    assert base_name('limit:tenant:"a@1"') == 'limit:tenant:"a@1"'
    assert base_name('limit:tenant:"a@1"@3') == 'limit:tenant:"a@1"'
    assert base_name("all@12") == "all"
    assert tree_partition(P, "anything", 2) == 2
    assert tree_partition(P, "root", None) == hashed_partition("root", P)
