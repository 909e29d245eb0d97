"""The message path end to end on the in-memory transport and a real SQLite journal."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid

from workflow_manager.config import parse_workflows
from workflow_manager.config.schedules import schedule_job_id
from workflow_manager.engine import EngineState, JobSubmitted, SchedulePaused, apply
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator
from workflow_manager.recorder import record
from workflow_manager.transport.memory import MemoryTransport

from .conftest import QUEUE, WORKFLOWS

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"


async def test_a_trigger_runs_its_job_through_to_the_outcome_notice(start):
    rig = await start()
    rig.transport.declared.add("answers")
    delivery, handled = rig.trigger("two", {"n": 1}, JOB, "answers")
    first = await rig.request("a")
    await handled
    assert delivery in rig.transport.acked
    assert (first.correlation_id, first.reply_to) == (f"{JOB}:a", "wm")
    assert first.message_id == f"{JOB}:a:1"
    headers = dict(first.headers)
    assert headers.pop("traceparent").startswith("00-")  # more in test_tracing.py
    assert headers == {"x-workflow": "two", "x-attempt": 1}
    assert json.loads(first.body) == {"n": 1}

    _, handled = rig.answer(first, {"m": 2})
    await handled
    second = await rig.request("b")
    assert json.loads(second.body) == {"m": 2}
    reply, handled = rig.answer(second, {"done": True})
    await handled
    (notice,) = rig.transport.sent_to("answers")
    assert json.loads(notice.body) == {"done": True}
    assert dict(notice.headers) == {"x-status": "completed"}
    assert reply in rig.transport.acked
    # The job left memory; the API still finds it, from its journal snapshot.
    assert JOB not in rig.orchestrator.state.jobs
    assert (await rig.orchestrator.find_job(JOB)).status == "completed"


async def test_a_replys_requests_go_out_while_its_commit_is_in_flight_and_it_is_acked_after(start):
    rig = await start()
    job_id = await rig.orchestrator.submit("two", {"n": 1})
    first = await rig.request("a")
    # Another connection takes SQLite's write lock: the next commit has to wait for it.
    blocker = sqlite3.connect(rig.db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        reply, handled = rig.answer(first, {"m": 2})
        second = await rig.request("b")  # out already...
        assert second.message_id == f"{job_id}:b:1"
        assert reply not in rig.transport.acked  # ...but the reply that caused it is not acked
        assert not handled.done()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await handled
    assert reply in rig.transport.acked


async def test_a_trigger_without_an_id_sends_nothing_before_its_commit(start):
    rig = await start()
    blocker = sqlite3.connect(rig.db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        delivery, handled = rig.trigger("two", {"n": 1})
        done, _ = await asyncio.wait([handled], timeout=0.3)  # the commit cannot happen yet
        assert not done and rig.transport.sent_to("a") == []
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await handled
    assert len(rig.transport.sent_to("a")) == 1 and delivery in rig.transport.acked


async def test_a_reply_naming_no_step_is_dead_lettered_with_the_reason_and_acked(start):
    rig = await start()
    delivery, handled = rig.transport.deliver("wm", b"{}", correlation_id="junk")
    await handled
    (dead,) = rig.transport.sent_to("wm.dead")
    assert dead.headers["x-dead-from"] == "wm"
    assert "expected '<job-uuid>:<step-name>'" in dead.headers["x-dead-reason"]
    assert (dead.body, dead.correlation_id) == (b"{}", "junk")
    assert delivery in rig.transport.acked


async def test_a_rejected_trigger_is_dead_lettered_and_its_sender_told_why(start):
    rig = await start()
    rig.transport.declared.add("answers")
    delivery, handled = rig.trigger("nope", {}, JOB, "answers")
    await handled
    (dead,) = rig.transport.sent_to("wm.dead")
    (answer,) = rig.transport.sent_to("answers")
    reason = json.loads(answer.body)["error"]
    assert "unknown workflow 'nope'" in reason and dead.headers["x-dead-reason"] == reason
    assert dict(answer.headers) == {"x-status": "rejected"}
    assert delivery in rig.transport.acked
    journal = rig.orchestrator.journal
    assert await journal.job(JOB) is None  # nothing journaled


async def test_a_trigger_that_is_not_json_is_dead_lettered_and_answered(start):
    rig = await start()
    rig.transport.declared.add("answers")
    delivery = rig.transport.deliver(
        "wm.jobs", b"{oops", correlation_id=JOB, reply_to="answers", headers={"workflow": "two"}
    )
    await delivery[1]
    (answer,) = rig.transport.sent_to("answers")
    assert "not valid JSON" in json.loads(answer.body)["error"]
    assert len(rig.transport.sent_to("wm.dead")) == 1


async def test_a_trigger_for_a_finished_job_is_answered_from_the_journal(start):
    rig = await start()
    rig.transport.declared.add("answers")
    await rig.orchestrator.submit("two", {}, JOB)
    await rig.answer(await rig.request("a"))[1]
    await rig.answer(await rig.request("b"), {"r": 1})[1]
    assert JOB not in rig.orchestrator.state.jobs
    delivery, handled = rig.trigger("two", {}, JOB, "answers")
    await handled
    (notice,) = rig.transport.sent_to("answers")
    assert json.loads(notice.body) == {"r": 1} and delivery in rig.transport.acked
    assert len(rig.transport.sent_to("a")) == 1  # not run again


async def test_recovery_resumes_running_jobs_and_republishes_what_was_never_confirmed(start):
    rig = await start()
    job_id = await rig.orchestrator.submit("two", {"n": 1})
    first = await rig.request("a")
    # A second job whose request is journaled but never confirmed (the broker holds it).
    rig.transport.confirming.clear()
    other = str(uuid.uuid4())
    submitting = asyncio.ensure_future(rig.orchestrator.submit("two", {"n": 2}, other))
    await asyncio.sleep(0)  # let the submission reach the journal
    journal = rig.orchestrator.journal
    await journal.flush()
    submitting.cancel()
    rig.transport.confirming.set()

    again = await start()  # a new manager on the same journal file
    assert job_id in again.orchestrator.state.jobs and other in again.orchestrator.state.jobs
    (resent,) = again.transport.sent_to("a")
    assert resent.message_id == f"{other}:a:1"
    await again.answer(first, {"m": 1})[1]  # the first job's old request is answered now
    assert json.loads((await again.request("b")).body) == {"m": 1}


async def test_cancel_and_retry_go_through_the_pipeline_and_the_journal(start):
    rig = await start()
    job_id = await rig.orchestrator.submit("two", {})
    await rig.request("a")
    job = await rig.orchestrator.cancel(job_id)
    assert job.status == "cancelled"
    stored = await rig.orchestrator.finished_row(job_id)
    assert stored is not None and stored.status == "cancelled"
    # A failed job that has left memory is brought back from its journal and retried.
    failing = await rig.orchestrator.submit("two", {})
    request = rig.transport.sent_to("a")[-1]
    await rig.answer(request, {}, **{"x-error": "boom"})[1]
    assert failing not in rig.orchestrator.state.jobs
    retried = await rig.orchestrator.retry(failing)
    assert retried.status == "running"
    assert rig.transport.sent_to("a")[-1].message_id == f"{failing}:a:2"


async def test_a_journal_that_cannot_be_written_stops_the_manager_and_nothing_is_acked(start):
    rig = await start()
    await rig.orchestrator.submit("two", {})
    first = await rig.request("a")
    await rig.orchestrator.journal.close()  # every write fails from now on
    reply, handled = rig.answer(first)
    await handled
    assert rig.orchestrator.failed.is_set()
    assert "closed" in str(rig.orchestrator.failure)
    assert reply not in rig.transport.acked  # RabbitMQ gives it to the next manager


class Recording:
    """An observer that keeps what it is shown."""

    def __init__(self) -> None:
        self.recovered_ids: list[str] = []
        self.seen: list[list[type]] = []

    def recovered(self, jobs) -> None:
        self.recovered_ids = [job.id for job in jobs]

    def observe(self, commands) -> None:
        self.seen.append([type(c).__name__ for c in commands])


async def test_observers_see_each_committed_events_commands_and_the_recovered_jobs(tmp_path):
    async def start(observer: Recording) -> tuple[Orchestrator, MemoryTransport]:
        transport = MemoryTransport()
        orchestrator = Orchestrator(
            parse_workflows(WORKFLOWS), ManagerSettings(queue="wm"),
            await open_journal(tmp_path / "wm.db"), transport, observers=[observer],
        )  # fmt: skip
        await orchestrator.start()
        return orchestrator, transport

    first = Recording()
    orchestrator, transport = await start(first)
    await orchestrator.submit("two", {}, JOB)
    (request,) = transport.sent_to("a")
    await transport.deliver("wm", b"{}", correlation_id=request.correlation_id)[1]
    assert first.recovered_ids == []
    assert first.seen == [
        ["Subject", "JobStarted", "Dispatch"],
        ["Subject", "StepFinished", "Dispatch"],
    ]
    await orchestrator.stop()
    again = Recording()
    orchestrator, _ = await start(again)
    assert again.recovered_ids == [JOB] and again.seen == []
    await orchestrator.stop()


NIGHTLY = """
workflows:
  - name: nightly
    schedules:
      - {name: run, every: 86400, catch_up: false}
    steps:
      - name: a
"""


async def test_a_firing_that_started_comes_back_though_a_pause_precedes_it_in_the_journal(
    start, tmp_path
):
    # Two managers: one journals a pause while the other, having read the schedule as running,
    # commits a firing. The journal holds the pause first, yet the firing did start a job.
    defs = parse_workflows(NIGHTLY)
    job_id = schedule_job_id("nightly", "run", 86400.0)
    elsewhere, here = EngineState.from_workflows(defs), EngineState.from_workflows(defs)
    journal = await open_journal(tmp_path / "wm.db")
    for state, event in (
        (elsewhere, SchedulePaused("nightly", "run", True, 1.0)),
        (here, JobSubmitted(job_id, "nightly", {}, 2.0, schedule="run")),
    ):
        await journal.append(record(event, apply(state, event)[1], QUEUE).batch)
    await journal.close()

    rig = await start(NIGHTLY)
    assert job_id in rig.orchestrator.state.jobs
    assert (await rig.request("a")).correlation_id == f"{job_id}:a"  # sent again
    assert await rig.orchestrator.schedule_status("nightly", "run") == (True, job_id)
