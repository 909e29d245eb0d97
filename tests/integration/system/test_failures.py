"""Failure handling end to end: timeouts, late replies, cancel and retry, across processes.

Retries with their backoff, on_error and a job's timeout are engine rules with nothing of the
broker in them: tests/unit/testing/test_failure_rules.py runs them in a Simulation."""

from __future__ import annotations

import json
import signal
import uuid

MANUAL = """
workflows:
  - name: slow
    steps:
      - {name: hand, queue: "{p}.hand", timeout: 0.5, retries: 1,
         retry_backoff: {initial: 0.01, multiplier: 1, max: 0.01}}
      - {name: next, depends: [hand], queue: "{p}.next"}
  - name: patient
    steps:
      - {name: hand, queue: "{p}.hand", retries: 1,
         retry_backoff: {initial: 2, multiplier: 1, max: 2}}
  - name: deadline
    timeout: 0.5
    steps:
      - {name: hand, queue: "{p}.hand"}
  - name: fan
    steps:
      - {name: spread, task: each}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: work, queue: "{p}.work"}
    on_cancel:
      - {name: tidy, queue: "{p}.tidy"}
"""


async def test_a_worker_that_never_replies_times_out(system):
    sys_ = await system(MANUAL)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("slow", {}, job_id, outcomes.name)
    first = await sys_.take("hand")
    second = await sys_.take("hand")
    assert (first.headers["x-attempt"], second.headers["x-attempt"]) == (1, 2)
    outcome = await sys_.next_outcome(outcomes)
    assert outcome.status == "failed"
    assert "no reply within 0.5s" in outcome.body["error"]["message"]


async def test_a_late_reply_after_a_retry_wins_when_it_is_the_first_good_one(system):
    sys_ = await system(MANUAL, log_level="debug")  # every ignored reply logged
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("slow", {}, job_id, outcomes.name)
    first = await sys_.take("hand")
    second = await sys_.take("hand")  # attempt 1 timed out
    await sys_.answer(first, b'{"from": 1}', **{"x-attempt": 1})
    nxt = await sys_.take("next")
    assert json.loads(nxt.body) == {"from": 1}
    await sys_.answer(second, b'{"from": 2}', **{"x-attempt": 2})  # ignored: step done
    await sys_.manager.process.wait_for_line(r"ignored .*:hand: step 'hand' is completed")
    await sys_.answer(nxt, b'{"ok": 1}')
    assert (await sys_.next_outcome(outcomes)).body == {"ok": 1}


async def test_cancelling_a_job_with_a_thousand_running_children(system):
    sys_ = await system(MANUAL, log_level="debug")  # every ignored reply logged
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("fan", {"items": list(range(1000))}, job_id, outcomes.name)
    request = await sys_.take("work")  # the fan-out has happened
    response = await sys_.http.delete(f"/api/job/{job_id}")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    tidy = await sys_.take("tidy")
    assert json.loads(tidy.body) == {"cancelled": True, "items": list(range(1000))}
    await sys_.answer(tidy, b"{}")
    outcome = await sys_.next_outcome(outcomes)
    assert outcome.status == "cancelled"
    child = (await sys_.http.get(f"/api/job/{request.correlation_id.split(':')[0]}")).json()
    assert child["status"] == "cancelled"
    await sys_.answer(request, b'{"item": 1}')  # a late reply from a child: dropped
    # Dropped: the cancelled tree may still be in memory, or already only in the journal.
    await sys_.manager.process.wait_for_line(r"ignored .*:work: (no job|job .* already cancelled)")
    again = await sys_.http.delete(f"/api/job/{job_id}")
    assert again.status_code == 409 and "already cancelled" in again.json()["error"]


async def test_retrying_a_failed_job_runs_only_what_failed(system):
    sys_ = await system(MANUAL)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("slow", {}, job_id, outcomes.name)
    for attempt in (1, 2):
        request = await sys_.take("hand")
        await sys_.answer(request, b"", **{"x-error": f"broken {attempt}"})
    failed = await sys_.next_outcome(outcomes)
    assert failed.body["error"]["message"] == "broken 2"
    response = await sys_.http.post(f"/api/job/{job_id}/retry")
    assert response.status_code == 200 and response.json()["status"] == "running"
    request = await sys_.take("hand")
    assert request.headers["x-attempt"] == 3
    await sys_.answer(request, b'{"fixed": true}')
    await sys_.answer(await sys_.take("next"), b'{"done": 1}')
    assert (await sys_.outcome_of(job_id, "slow")).body == {"done": 1}
    again = await sys_.http.post(f"/api/job/{job_id}/retry")
    assert again.status_code == 409


async def test_a_poison_reply_fails_only_its_step(system):
    sys_ = await system(MANUAL)
    outcomes = await sys_.reply_queue()
    job_id = str(uuid.uuid4())
    await sys_.trigger("deadline", {}, job_id, outcomes.name)
    request = await sys_.take("hand")
    await sys_.answer(request, b"\xff\xfe\x00garbage")
    outcome = await sys_.next_outcome(outcomes)
    assert outcome.status == "failed" and "not UTF-8" in outcome.body["error"]["message"]
    assert (await sys_.http.get("/healthz")).status_code == 200


async def test_a_retry_wait_survives_a_manager_kill(system):
    sys_ = await system(MANUAL)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.channel.declare_queue(f"{sys_.prefix}.outcomes", durable=True)
    await sys_.trigger("patient", {}, job_id, outcomes.name)
    request = await sys_.take("hand")
    await sys_.answer(request, b"", **{"x-error": "try later"})
    await sys_.manager.process.wait_for_line(f"retry scheduled job={job_id} step=hand attempt=2")
    await sys_.restart(signal.SIGKILL)  # the 2 s retry wait is pending in the journal
    retried = await sys_.take("hand")
    if retried.headers["x-attempt"] == 1:
        # Killed before attempt 1's confirm was journaled: recovery sent it again (at least once).
        retried = await sys_.take("hand")
    assert retried.headers["x-attempt"] == 2
    await sys_.answer(retried, b'{"ok": 2}')
    outcome = await sys_.next_outcome(outcomes)
    assert (outcome.status, outcome.body) == ("completed", {"ok": 2})
    await outcomes.delete(if_unused=False, if_empty=False)
