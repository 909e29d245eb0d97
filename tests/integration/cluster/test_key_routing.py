"""Key routing: three managers, P=6, a workflow with `concurrency: {limit: 1, key: account}`.
Jobs of one account share a partition (placed by their key at submission, whichever manager
took the trigger and whatever its id), so the one manager running it keeps the limit: never
two requests of one account in hand at once, by the worker's own record."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid

import pytest

from ..durability.helpers import publish_trigger
from .rig import start_key_worker, until

ACCOUNTS = ("acme", "globex", "initech", "umbrella")
JOBS = 60
OUTCOMES_TIMEOUT_S = 120.0
WORKFLOW = """
workflows:
  - name: per-account
    concurrency: {limit: 1, key: account}
    steps:
      - {name: book, queue: "{p}.book"}
"""


@pytest.fixture
def partitions() -> int:
    return 6


def _overlaps(spans: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of requests of one account whose (start, end) overlap."""
    found = []
    for account in ACCOUNTS:
        mine = sorted((s for s in spans if s["account"] == account), key=lambda s: s["start"])
        found += [(a, b) for a, b in itertools.pairwise(mine) if b["start"] < a["end"]]
    return found


@pytest.mark.timeout(240)
async def test_jobs_of_one_account_never_run_at_once_across_three_managers(cluster, tmp_path):
    cluster.config.write_text(WORKFLOW.replace("{p}", cluster.prefix))
    cluster.queues.add(f"{cluster.prefix}.book")
    record = tmp_path / "requests.jsonl"
    outcomes = await cluster.outcome_queue()
    await start_key_worker(cluster)
    # The managers share the partitions 2/2/2: a trigger often reaches a manager that must
    # hand it over, and an account's jobs would run on several managers were they not placed
    # by their key.
    for _ in range(3):
        await cluster.start_manager()
    holding = await cluster.balanced(cluster.managers, timeout_s=30)

    sent = []
    for n in range(JOBS):
        job_id = str(uuid.uuid4()) if n % 3 else None  # a third without an id: the manager's
        payload = {"account": ACCOUNTS[n % len(ACCOUNTS)], "n": n, "record": str(record)}
        sent.append((payload, job_id))
    await asyncio.gather(
        *(
            publish_trigger(
                cluster.channel,
                f"{cluster.queue}.jobs",
                "per-account",
                payload,
                job_id,
                outcomes.queue_name,
            )  # fmt: skip
            for payload, job_id in sent
        )
    )
    await outcomes.wait_for(JOBS, OUTCOMES_TIMEOUT_S)

    results = {cid: copies[0] for cid, copies in outcomes.by_id.items()}
    assert all(o.status == "completed" for o in results.values()), list(results.values())[:3]
    assert sorted(o.body["n"] for o in results.values()) == list(range(JOBS))
    named = {job_id for _, job_id in sent if job_id}
    assert named <= set(results), "a sender-chosen id did not name its job"

    await until(lambda: len(record.read_text().splitlines()) >= JOBS, "every request recorded")
    spans = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(spans) == JOBS, "a request was run more than once"
    assert not _overlaps(spans), f"two requests of one account at once: {_overlaps(spans)[:2]}"
    assert all(span["beside"] == 0 for span in spans)

    # Each account's jobs share one partition, and the journal says which (jobs.partition).
    rows = cluster.query(
        "SELECT payload::jsonb->>'account', array_agg(DISTINCT partition) FROM jobs"
        " WHERE parent_id IS NULL GROUP BY 1 ORDER BY 1"
    )
    assert [account for account, _ in rows] == sorted(ACCOUNTS)
    assert all(len(placed) == 1 and placed[0] is not None for _, placed in rows), rows
    print(f"partitions by account: {rows}; held at the start: {holding}")
