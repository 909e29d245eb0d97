"""Restarting the manager: running jobs carry on, finished ones stay queryable."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import uuid

from workflow_manager.config import load_workflows
from workflow_manager.engine import EngineState, JobSubmitted, apply
from workflow_manager.journal import open_journal
from workflow_manager.recorder import record

from ..harness import ROOT

MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
      - {name: next, depends: [hand], queue: "{p}.next"}
"""


async def test_running_jobs_survive_a_restart_and_finished_ones_stay_queryable(system):
    sys_ = await system(MANUAL)
    outcomes = await sys_.channel.declare_queue(f"{sys_.prefix}.outcomes", durable=True)
    done_id, running_id = str(uuid.uuid4()), str(uuid.uuid4())
    for job_id in (done_id, running_id):
        await sys_.trigger("manual", {"job": job_id}, job_id, outcomes.name)
    requests = {}
    for _ in range(2):
        request = await sys_.take("hand")
        requests[request.correlation_id.split(":")[0]] = request
    await sys_.answer(requests[done_id], b'{"a": 1}')
    await sys_.answer(await sys_.take("next"), b'{"done": 1}')
    first = await sys_.next_outcome(outcomes)
    assert (first.correlation_id, first.body) == (done_id, {"done": 1})

    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL

    # The running job goes on where it was: its pending step's reply is accepted.
    await sys_.answer(requests[running_id], b'{"b": 2}')
    # Requests are sent at least once too: the finished job's last one, confirmed but not yet
    # marked sent in the journal at the kill (the mark rides along with a later commit), is
    # published again, and may come first.
    following = await sys_.take("next")
    while following.correlation_id == f"{done_id}:next":
        following = await sys_.take("next")
    assert following.correlation_id == f"{running_id}:next"
    await sys_.answer(following, b'{"done": 2}')
    # Notices are sent at least once: one unconfirmed at the kill comes again, same body.
    second = await sys_.next_outcome(outcomes)
    while second.correlation_id == done_id:
        assert second.body == {"done": 1}
        second = await sys_.next_outcome(outcomes)
    assert (second.correlation_id, second.body) == (running_id, {"done": 2})
    # The job that finished before the restart is still there, with its steps and result.
    job = (await sys_.http.get(f"/api/job/{done_id}")).json()
    assert job["status"] == "completed" and job["result"] == {"done": 1}
    assert [e["name"] for e in job["completed"]] == ["__start__", "hand", "next", "__end__"]
    listing = (await sys_.http.get("/api/workflow/manual")).json()
    assert sorted(listing["completed"]) == sorted([done_id, running_id])
    # A duplicate trigger for the finished job creates nothing and is answered at once.
    late = await sys_.outcome_of(done_id, "manual")
    assert late.body == {"done": 1}
    await outcomes.delete(if_unused=False, if_empty=False)


async def test_unconfirmed_dispatches_are_published_again_on_start(system):
    """A dispatch journaled but never confirmed (a crash in between) is published by recovery."""
    sys_ = await system(MANUAL)
    await sys_.manager.process.stop()
    job_id = str(uuid.uuid4())
    workflows = load_workflows(sys_.config)
    state = EngineState.from_workflows(workflows)
    event = JobSubmitted(
        job_id, "manual", {"k": 1}, 1.0, definition=workflows["manual"].content_hash
    )
    _, commands = apply(state, event)
    result = record(event, commands, sys_.manager.queue)
    journal = await open_journal(sys_.db)
    await journal.append(result.batch)  # journaled as intended, never marked sent
    await journal.close()
    assert [message.message_id for message in result.outbound] == [f"{job_id}:hand:1"]

    await sys_.restart()
    request = await sys_.take("hand")
    assert (request.correlation_id, request.message_id) == (f"{job_id}:hand", f"{job_id}:hand:1")
    assert json.loads(request.body) == {"k": 1}
    await sys_.answer(request, b"{}")
    await sys_.answer(await sys_.take("next"), b'{"ok": true}')
    assert (await sys_.outcome_of(job_id, "manual")).body == {"ok": True}


async def test_journal_command_prints_a_jobs_events_in_order(system):
    sys_ = await system(MANUAL)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("manual", {"x": 1}, job_id, outcomes.name)
    await sys_.answer(await sys_.take("hand"), b'{"y": 2}')
    await sys_.answer(await sys_.take("next"), b'{"z": 3}')
    await sys_.next_outcome(outcomes)
    # The outcome may go out while its commit is in flight: a clean stop writes everything.
    await sys_.restart()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "workflow_manager", "journal", job_id, "--db", str(sys_.db), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    kinds = [k for line in lines for k in ("submitted", "started", "dispatched", "replied",
             "finished", "notified") if f" {k} " in f" {line} "]  # fmt: skip
    assert kinds[:3] == ["submitted", "started", "dispatched"]
    assert kinds[-2:] == ["finished", "notified"]
    assert kinds.count("replied") == 2
    assert any(json.dumps({"y": 2}, separators=(",", ":")) in line for line in lines)
