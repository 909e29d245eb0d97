"""Retrying a failed job of a workflow with `unique`: refused while another job holds its key."""

from __future__ import annotations

from tests.unit.engine.helpers import JOB, OTHER_JOB, cid, make_state, reply, submit
from workflow_manager.engine import JobSubmitted, Refused, RetryRequested, apply

FLOW = """
workflows:
  - name: refresh
    unique: {key: account}
    steps: [{name: fetch}]
"""


def test_a_retry_is_refused_while_another_job_holds_the_key_and_runs_once_it_is_free():
    state = make_state(FLOW)
    submit(state, "refresh", {"account": "a"})
    reply(state, cid(JOB, "fetch"), error="down", at=2.0)
    apply(state, JobSubmitted(OTHER_JOB, "refresh", {"account": "a"}, 3.0))
    commands = apply(state, RetryRequested(JOB, 4.0))[1]
    assert [(c.kind, c.reason) for c in commands if isinstance(c, Refused)] == [
        (
            "conflict",
            f"job {OTHER_JOB} has the unique key \"a\" of workflow 'refresh' and has not ended;"
            f" retry job {JOB} once it has",
        )
    ]
    assert state.unique == {("refresh", '"a"'): OTHER_JOB}
    reply(state, cid(OTHER_JOB, "fetch"), {}, at=5.0)
    assert not any(isinstance(c, Refused) for c in apply(state, RetryRequested(JOB, 6.0))[1])
    assert state.unique == {("refresh", '"a"'): JOB}
