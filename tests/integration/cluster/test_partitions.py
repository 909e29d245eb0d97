"""One partitioned manager on PostgreSQL: replies on the partitions' queues, triggers of a
partition it does not hold handed over and run once it takes it, the partition count fixed
per database, and fencing (a taken-over partition gets no commit from the old owner)."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.journal import open_journal

from ..durability.helpers import check_outcomes
from ..harness import Process, free_port
from .rig import ids_in_partition, rejoins

OUTCOMES_TIMEOUT_S = 60.0


@pytest.mark.timeout(120)
async def test_one_manager_runs_every_partition_with_replies_on_their_queues(cluster):
    outcomes = await cluster.outcome_queue()
    await cluster.start_worker()
    manager = await cluster.start_manager()
    ids = [i for k in range(cluster.partitions) for i in ids_in_partition(k, cluster.partitions, 3)]
    payloads = {job_id: n for n, job_id in enumerate(ids)}
    for job_id, n in payloads.items():
        await cluster.trigger({"n": n}, job_id, outcomes.queue_name)
    await outcomes.wait_for(len(payloads), OUTCOMES_TIMEOUT_S)
    check_outcomes(outcomes, payloads)

    leases = cluster.query("SELECT partition, owner, epoch FROM partition_leases ORDER BY 1")
    assert [p for p, _, _ in leases] == list(range(cluster.partitions))
    assert len({owner for _, owner, _ in leases}) == 1 and all(e == 1 for _, _, e in leases)
    split = Partitioning(cluster.queue, cluster.partitions)
    rows = cluster.query("SELECT root_id, meta FROM events WHERE kind = 'dispatched'")
    assert {root for root, _ in rows} == set(payloads)
    wrong = [(r, m) for r, m in rows if json.loads(m)["reply_to"] != split.reply_queue(r)]
    assert not wrong, f"requests not answered to their partition's queue: {wrong[:3]}"
    assert len({json.loads(m)["reply_to"] for _, m in rows}) == cluster.partitions

    async with httpx.AsyncClient(base_url=manager.api_url, timeout=10) as http:
        view = (await http.get("/api/cluster")).json()
        scraped = (await http.get("/metrics")).text
    assert view["partitions"] == cluster.partitions and view["manager"] == manager.owner
    assert [(m["name"], m["partitions"]) for m in view["managers"]] == [
        (manager.owner, list(range(cluster.partitions)))
    ]
    assert [lease["epoch"] for lease in view["leases"]] == [1] * cluster.partitions
    assert f"workflow_manager_partitions_owned {float(cluster.partitions)}" in scraped
    assert "workflow_manager_lease_renewal_seconds " in scraped


@pytest.mark.timeout(120)
async def test_a_trigger_of_a_partition_held_elsewhere_waits_for_it_and_runs_once(cluster):
    # Another (pretend) manager holds partition 1 for a while: ours takes 0, 2 and 3.
    await (await open_journal(cluster.db)).close()  # the tables
    cluster.query("INSERT INTO cluster_partitions VALUES (%s)", (cluster.partitions,))
    cluster.query(
        "INSERT INTO partition_leases (partition, owner, epoch, expires_at)"
        " SELECT k, CASE k WHEN 1 THEN 'elsewhere' END, CASE k WHEN 1 THEN 7 ELSE 0 END,"
        " CASE k WHEN 1 THEN 1e12 ELSE 0 END FROM generate_series(0, %s - 1) k",
        (cluster.partitions,),
    )
    outcomes = await cluster.outcome_queue()
    await cluster.start_worker()
    manager = await cluster.start_manager()
    mine, theirs = ids_in_partition(0, cluster.partitions, 3), ids_in_partition(1, 4, 3)
    payloads = {job_id: n for n, job_id in enumerate(mine + theirs)}
    for job_id, n in payloads.items():
        await cluster.trigger({"n": n}, job_id, outcomes.queue_name)
    await outcomes.wait_for(len(mine), OUTCOMES_TIMEOUT_S)
    handed = await cluster.channel.declare_queue(f"{cluster.queue}.p1", durable=True)
    assert handed.declaration_result.message_count == len(theirs)
    assert set(outcomes.by_id) == set(mine)

    cluster.query("UPDATE partition_leases SET expires_at = 0 WHERE partition = 1")
    await manager.process.wait_for_line(r"running partitions \[1\]", 30)
    await outcomes.wait_for(len(payloads), OUTCOMES_TIMEOUT_S)
    check_outcomes(outcomes, payloads)
    assert cluster.query("SELECT epoch FROM partition_leases WHERE partition = 1") == [(8,)]


@pytest.mark.timeout(60)
async def test_the_partition_count_is_fixed_per_database(cluster, tmp_path):
    manager = await cluster.start_manager()
    assert await manager.process.stop() == 0
    assert cluster.query("SELECT count(*) FROM partition_leases WHERE owner IS NULL") == [(4,)]
    for partitions, said in [(3, "--partitions 3"), (None, "no --partitions")]:
        other = await Process.start(
            "manager (refused)", *cluster.serve_args(free_port(), partitions)
        )
        assert await other.exited(30) != 0
        assert f"split into 4 partitions, and the manager was started with {said}" in (other.output)
    sqlite = cluster.serve_args(free_port(), 4)
    sqlite[sqlite.index("--db") + 1] = str(tmp_path / "wm.db")
    refused = await Process.start("manager (sqlite)", *sqlite)
    assert await refused.exited(30) != 0
    assert "--partitions 4 needs the journal in PostgreSQL" in refused.output


@pytest.mark.timeout(120)
async def test_a_manager_whose_partition_is_taken_over_commits_nothing_more(cluster):
    outcomes = await cluster.outcome_queue()
    await cluster.start_worker()
    manager = await cluster.start_manager()
    first = {str(uuid.uuid4()): n for n in range(4)}
    for job_id, n in first.items():
        await cluster.trigger({"n": n}, job_id, outcomes.queue_name)
    await outcomes.wait_for(len(first), OUTCOMES_TIMEOUT_S)

    # Another manager takes every partition (its UPDATE waits for any commit in flight).
    cluster.query(
        "UPDATE partition_leases SET owner = 'usurper', epoch = epoch + 1, expires_at = 1e12"
    )
    last_seq = cluster.query("SELECT max(seq) FROM events")[0][0]
    for n in range(4, 10):
        await cluster.trigger({"n": n}, str(uuid.uuid4()), outcomes.queue_name)
    # It stops taking work at once and rejoins as a standby: every lease is the usurper's.
    await manager.process.wait_for_line(r"rejoined: running 0 partitions", 30)
    assert manager.process.proc.returncode is None, manager.process.output
    written = cluster.query("SELECT seq, kind, root_id FROM events WHERE seq > %s", (last_seq,))
    assert not written, f"written after the take-over: {written}\n{manager.process.output}"
    # The ledger says the same: every commit was at the first epoch, none at the usurper's.
    ledger = cluster.commits()
    assert ledger and all(
        [(epoch, owner) for epoch, owner, _ in at] == [(1, manager.owner)] for at in ledger.values()
    ), ledger
    assert "lost" in manager.process.output
    assert await rejoins(manager) == {"lease": 1.0}, manager.process.output
