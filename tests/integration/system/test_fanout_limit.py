"""A fan-out that would copy its shared input into every child past `--max-fanout-bytes` is
refused with a clear error, before any child starts, and the journal stays small.

Issue 23 measured 1,000 children with a 200 KB extra key writing 1.5 GB of journal.
"""

from __future__ import annotations

import uuid
from pathlib import Path

WORKFLOW = """
workflows:
  - name: spread
    steps:
      - {name: fan, task: each}
    tasks:
      - name: each
        itemListKey: items
        max_in_flight: 50
        steps:
          - {name: square, queue: "{p}.square"}
"""

MEGABYTE = 1_000_000
JOURNAL_GROWTH_LIMIT = 50 * MEGABYTE


def _journal_bytes(db: Path) -> int:
    """The SQLite journal's size on disk: the database file and its write-ahead log."""
    return sum(path.stat().st_size for path in (db, Path(f"{db}-wal")) if path.exists())


async def test_a_thousand_children_copying_a_megabyte_each_are_refused(system):
    sys_ = await system(WORKFLOW, step_queues=["square"])
    before = _journal_bytes(sys_.db)
    job_id = str(uuid.uuid4())
    payload = {"blob": "x" * (MEGABYTE - len('{"blob":""}')), "items": list(range(1000))}
    outcome = await sys_.run("spread", payload, job_id)

    message = (
        "task step 'fan': a fan-out of 1,000 children would copy 1,000,000,000 bytes of input "
        "(each child gets the step's other keys, 'blob': 1,000,000 bytes); the limit is "
        "67,108,864 (--max-fanout-bytes)"
    )
    assert outcome.status == "failed"
    assert outcome.body["error"]["step"] == "fan"
    assert outcome.body["error"]["message"].startswith(message)
    job = (await sys_.http.get(f"/api/job/{job_id}")).json()
    assert job["status"] == "failed"
    assert job["error"]["message"].startswith(message)
    assert job["progress"]["children_total"] == 0, job["progress"]
    grown = _journal_bytes(sys_.db) - before
    assert grown < JOURNAL_GROWTH_LIMIT, f"the journal grew {grown:,} bytes"


async def test_the_limit_is_serves_option_and_fan_outs_within_it_run(system):
    limit = 2 * 1024 * 1024
    sys_ = await system(
        WORKFLOW, step_queues=["square"], manager_args=("--max-fanout-bytes", str(limit))
    )
    within = await sys_.run("spread", {"note": "n" * 10_000, "items": list(range(100))})
    assert within.status == "completed", within.body  # 100 copies of 10 KB: 1 MB
    assert within.body["items"] == [i * i for i in range(100)]

    past = await sys_.run("spread", {"note": "n" * 10_000, "items": list(range(300))})
    assert past.status == "failed"
    assert "a fan-out of 300 children would copy 3,003," in past.body["error"]["message"]
    assert f"the limit is {limit:,} (--max-fanout-bytes)" in past.body["error"]["message"]
