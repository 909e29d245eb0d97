"""Debounce across three managers (P=6): triggers are placed by their debounce key, so the
triggers of one key meet on one manager whichever manager took them: 300 triggers on three
keys make exactly three jobs (by the worker's own record and the journal), and every other
trigger is answered `debounced` naming its key's job."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from ..durability.helpers import publish_trigger
from .rig import start_key_worker, until

ACCOUNTS = ("acme", "globex", "initech")
TRIGGERS = 300
OUTCOMES_TIMEOUT_S = 120.0
WORKFLOW = """
workflows:
  - name: debounced
    debounce: {key: account, period: 120}
    steps:
      - {name: book, queue: "{p}.book"}
"""


@pytest.fixture
def partitions() -> int:
    return 6


@pytest.mark.timeout(240)
async def test_triggers_of_one_key_make_one_job_across_three_managers(cluster, tmp_path):
    cluster.config.write_text(WORKFLOW.replace("{p}", cluster.prefix))
    cluster.queues.add(f"{cluster.prefix}.book")
    record = tmp_path / "requests.jsonl"
    outcomes = await cluster.outcome_queue()
    await start_key_worker(cluster)
    for _ in range(3):
        await cluster.start_manager()
    await cluster.balanced(cluster.managers, timeout_s=30)

    sent = [
        (str(uuid.uuid4()), {"account": ACCOUNTS[n % 3], "n": n, "record": str(record)})
        for n in range(TRIGGERS)
    ]
    await asyncio.gather(
        *(
            publish_trigger(
                cluster.channel,
                f"{cluster.queue}.jobs",
                "debounced",
                payload,
                job_id,
                outcomes.queue_name,
            )  # fmt: skip
            for job_id, payload in sent
        )
    )
    await outcomes.wait_for(TRIGGERS, OUTCOMES_TIMEOUT_S)

    answers = {cid: copies[0] for cid, copies in outcomes.by_id.items()}
    assert set(answers) == {job_id for job_id, _ in sent}
    completed = {cid: o for cid, o in answers.items() if o.status == "completed"}
    assert len(completed) == len(ACCOUNTS), [o.status for o in answers.values()][:5]
    account_of = {job_id: payload["account"] for job_id, payload in sent}
    job_of = {account_of[cid]: cid for cid in completed}
    assert sorted(job_of) == sorted(ACCOUNTS)
    for cid, outcome in answers.items():
        if cid not in completed:
            assert outcome.status == "debounced", outcome
            assert outcome.body["job"] == job_of[account_of[cid]]

    await until(lambda: len(record.read_text().splitlines()) >= 3, "every request recorded")
    spans = [json.loads(line) for line in record.read_text().splitlines()]
    assert sorted(span["cid"] for span in spans) == sorted(f"{j}:book" for j in job_of.values())
    rows = cluster.query("SELECT id FROM jobs WHERE parent_id IS NULL AND workflow = 'debounced'")
    assert sorted(row[0] for row in rows) == sorted(job_of.values())
