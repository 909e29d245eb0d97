"""Key routing: three managers, P=6, a workflow with `concurrency: {limit: 1, key: account}`.
Jobs of one account share a partition (placed by their key at submission, whichever manager
took the trigger and whatever its id), so the one manager running it keeps the limit: never
two requests of one account in hand at once, by the worker's own record."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import uuid

import httpx
import pytest

from manager.journal import open_journal

from ..durability.helpers import READY_TIMEOUT_S, publish_trigger
from ..harness import Process
from .rig import until

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

_OWNER = "SELECT owner FROM partition_leases WHERE partition = %s"


@pytest.fixture
def partitions() -> int:
    return 6


async def _start_worker(cluster) -> Process:
    worker = await Process.start(
        "key worker",
        sys.executable, "-m", "pyworker", "tests/integration/cluster/keyworkers.py:worker",
        "--amqp-url", cluster.amqp_url, "--queue-prefix", f"{cluster.prefix}.",
        "--prefetch", "50",
    )  # fmt: skip
    await worker.wait_for_line(r"worker consuming", READY_TIMEOUT_S)
    cluster.workers.append(worker)
    return worker


async def _holding(cluster) -> dict[str, list[int]]:
    """Each manager's partitions, as the first one's GET /api/cluster shows them."""
    async with httpx.AsyncClient(base_url=cluster.managers[0].api_url, timeout=10) as http:
        view = (await http.get("/api/cluster")).json()
    return {m["name"]: m["partitions"] for m in view["managers"]}


async def _held_elsewhere(cluster) -> None:
    """Every partition held by a pretend manager, so the managers start with none."""
    await (await open_journal(cluster.db)).close()  # the tables
    cluster.query("INSERT INTO cluster_partitions VALUES (%s)", (cluster.partitions,))
    cluster.query(
        "INSERT INTO partition_leases (partition, owner, epoch, expires_at)"
        " SELECT k, 'elsewhere', 1, 1e12 FROM generate_series(0, %s - 1) k",
        (cluster.partitions,),
    )


async def _spread(cluster) -> None:
    """Free the pretend manager's partitions one at a time: each goes to the manager whose
    lease tick comes first, so they end up spread over the managers."""
    for partition in range(cluster.partitions):
        cluster.query(
            "UPDATE partition_leases SET expires_at = 0 WHERE partition = %s", (partition,)
        )
        await until(lambda k=partition: cluster.query(_OWNER, (k,)) != [("elsewhere",)], "taken")
        await asyncio.sleep(0.4)  # a different phase of the managers' lease ticks


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
    await _start_worker(cluster)
    # The partitions spread over the managers: a trigger often reaches one that must hand it
    # over, and an account's jobs would run on several managers were they not placed by key.
    await _held_elsewhere(cluster)
    for _ in range(3):
        await cluster.start_manager()
    await _spread(cluster)
    holding = await _holding(cluster)
    assert len(holding) >= 2, f"the partitions did not spread: {holding}"

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
