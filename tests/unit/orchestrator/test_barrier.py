"""The barrier around each message: a failure at any stage of the pipeline refuses that message
alone, leaves memory agreeing with the journal, and the manager goes on.

Failures are injected into the real stages (intake, engine, recorder, the journal's encoding,
the outbox's publish) for messages carrying the word "poison"; everything else runs as usual,
on the in-memory transport and a real SQLite journal.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

import workflow_manager.intake
import workflow_manager.journal.writer
import workflow_manager.pipeline
from workflow_manager.engine import JobSubmitted, StepReplied
from workflow_manager.errors import MessageFailed

from .conftest import Rig

JOB = "7a1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
POISON = {"poison": True}


def _poisoned(event: Any) -> bool:
    if isinstance(event, JobSubmitted):
        return bool(event.payload.get("poison")) if isinstance(event.payload, dict) else False
    return isinstance(event, StepReplied) and b"poison" in event.body


def _failing_after(real: Callable[..., Any], poisoned: Callable[..., bool]) -> Callable[..., Any]:
    """`real`, which then fails for poisoned calls: whatever it changed stays changed, as a
    stage failing half-way through would leave it."""

    def stage(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if poisoned(*args):
            raise RuntimeError("injected failure")
        return result

    return stage


def _inject(monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    """Make `stage` fail for poisoned messages."""
    if stage == "intake":
        real = workflow_manager.intake.trigger_event
        monkeypatch.setattr(
            workflow_manager.intake,
            "trigger_event",
            _failing_after(real, lambda delivery, *_: b"poison" in delivery.body),
        )
    elif stage == "engine":
        real = workflow_manager.pipeline.apply
        monkeypatch.setattr(
            workflow_manager.pipeline, "apply", _failing_after(real, lambda _, e: _poisoned(e))
        )
    elif stage == "recorder":
        real = workflow_manager.pipeline.record
        monkeypatch.setattr(
            workflow_manager.pipeline,
            "record",
            _failing_after(real, lambda e, *_: _poisoned(e)),
        )
    elif stage == "journal encode":
        real = workflow_manager.journal.writer.encode_event

        def encode(row: Any) -> Any:
            if b"poison" in (row.body or b""):
                raise RecursionError("maximum recursion depth exceeded (injected)")
            return real(row)

        monkeypatch.setattr(workflow_manager.journal.writer, "encode_event", encode)
    else:
        raise AssertionError(stage)


async def _good_job_completes(rig: Rig, job_id: str, count: int) -> None:
    """A job of `two` submitted over AMQP runs to its end (its `count`-th request on `a`)."""
    rig.transport.declared.add("answers")
    _, handled = rig.trigger("two", {"n": 1}, job_id, "answers")
    await handled
    await rig.answer(await rig.request("a", count))[1]
    await rig.answer(await rig.request("b", count), {"ok": True})[1]
    notice = rig.transport.sent_to("answers")[-1]
    assert json.loads(notice.body) == {"ok": True}


@pytest.mark.parametrize("stage", ["intake", "engine", "recorder", "journal encode"])
async def test_a_trigger_failing_at_a_stage_is_refused_alone(start, monkeypatch, caplog, stage):
    rig = await start(max_running_jobs=1)
    rig.transport.declared.add("answers")
    _inject(monkeypatch, stage)

    with caplog.at_level(logging.ERROR, logger="workflow_manager.deliveries"):
        delivery, handled = rig.trigger("two", POISON, JOB, "answers")
        await handled

    # Refused with its reason: dead-lettered, its sender told, acked; logged once.
    (dead,) = rig.transport.sent_to("wm.dead")
    reason = dead.headers["x-dead-reason"]
    assert "could not handle" in reason and "nothing of it was kept" in reason
    (answer,) = rig.transport.sent_to("answers")
    assert json.loads(answer.body)["error"] == reason
    assert answer.headers["x-status"] == "rejected"
    assert delivery in rig.transport.acked
    refusals = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and JOB in refusals[0].getMessage()
    # Memory agrees with the journal: no trace of the job, no slot held.
    assert JOB not in rig.orchestrator.state.jobs
    assert await rig.orchestrator.journal.job(JOB) is None
    assert rig.transport.sent_to("a") == []
    # Other jobs never notice: with one slot (--max-running-jobs 1), the next job runs.
    await _good_job_completes(rig, "8b2c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f", 1)


@pytest.mark.parametrize("stage", ["engine", "recorder", "journal encode"])
async def test_a_reply_failing_at_a_stage_is_refused_and_its_step_still_waits(
    start, monkeypatch, stage
):
    rig = await start()
    _, handled = rig.trigger("two", {"n": 1}, JOB)
    await handled
    request = await rig.request("a")
    _inject(monkeypatch, stage)

    poison, handled = rig.answer(request, {"poison": "x"})
    await handled

    assert poison in rig.transport.acked
    (dead,) = rig.transport.sent_to("wm.dead")
    assert dead.correlation_id == f"{JOB}:a" and "could not handle" in dead.headers["x-dead-reason"]
    # The job is as the journal has it: step a still waiting for its reply, b not sent.
    job = rig.orchestrator.state.jobs[JOB]
    assert job.steps["a"].status == "running" and rig.transport.sent_to("b") == []
    # A good reply to the same request goes through.
    await rig.answer(request, {"m": 2})[1]
    assert json.loads((await rig.request("b")).body) == {"m": 2}


async def test_a_submission_failing_in_the_engine_answers_an_error_and_frees_its_slot(
    start, monkeypatch
):
    rig = await start(max_running_jobs=1)
    _inject(monkeypatch, "engine")

    with pytest.raises(MessageFailed, match="could not handle JobSubmitted"):
        await rig.orchestrator.submit("two", POISON, JOB)

    assert JOB not in rig.orchestrator.state.jobs
    good = await rig.orchestrator.submit("two", {"n": 1})
    assert (await rig.request("a")).correlation_id == f"{good}:a"  # the slot was free


async def test_a_message_the_outbox_cannot_publish_holds_up_no_other(start, monkeypatch, caplog):
    rig = await start()
    real = rig.transport.publish

    async def publish(message: Any) -> None:
        if b"poison" in message.body:
            raise ValueError("injected: cannot encode this message")
        await real(message)

    monkeypatch.setattr(rig.transport, "publish", publish)
    with caplog.at_level(logging.ERROR, logger="workflow_manager.outbox"):
        delivery, handled = rig.trigger("two", POISON, JOB)
        await handled

    # Its trigger was journaled and acked; the request that cannot go out is reported and
    # stays unconfirmed in the journal (published again at the next start or reconnect).
    assert delivery in rig.transport.acked
    assert any(f"{JOB}:a:1" in r.getMessage() for r in caplog.records)
    pending = await rig.orchestrator.journal.pending_outbound()
    assert [row.msg_id for row in pending] == [f"{JOB}:a:1"]
    await _good_job_completes(rig, "8b2c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f", 1)


async def test_a_trigger_nested_too_deeply_is_refused_before_anything_changes(start):
    rig = await start()
    rig.transport.declared.add("answers")
    body = b'{"d": ' + b"[" * 990 + b"1" + b"]" * 990 + b"}"
    delivery = rig.transport.deliver(
        "wm.jobs", body, correlation_id=JOB, reply_to="answers", headers={"workflow": "two"}
    )
    await delivery[1]

    (answer,) = rig.transport.sent_to("answers")
    error = json.loads(answer.body)["error"]
    assert "nested more than 128 levels deep" in error and "--max-json-depth" in error
    assert JOB not in rig.orchestrator.state.jobs
    assert await rig.orchestrator.journal.job(JOB) is None


async def test_a_retry_whose_replay_fails_is_refused_and_memory_rebuilt(start, monkeypatch):
    rig = await start()
    failing = await rig.orchestrator.submit("two", {})
    await rig.answer(rig.transport.sent_to("a")[-1], {}, **{"x-error": "boom"})[1]
    assert failing not in rig.orchestrator.state.jobs  # failed, and left memory
    real = workflow_manager.pipeline.replay

    def replay(state: Any, events: Any) -> Any:
        real(state, events)  # the job is back in memory...
        raise RuntimeError("injected failure")  # ...and then the request fails

    monkeypatch.setattr(workflow_manager.pipeline, "replay", replay)
    with pytest.raises(MessageFailed, match=f"could not handle retry of job {failing}"):
        await rig.orchestrator.retry(failing)
    assert failing not in rig.orchestrator.state.jobs  # as the journal has it

    monkeypatch.setattr(workflow_manager.pipeline, "replay", real)
    retried = await rig.orchestrator.retry(failing)
    assert retried.status == "running"
    assert rig.transport.sent_to("a")[-1].message_id == f"{failing}:a:2"


PAIR = """
workflows:
  - name: pair
    steps:
      - name: a
      - name: b
      - {name: c, depends: [a, b]}
  - name: two
    steps:
      - name: a
      - {name: b, depends: [a]}
"""


async def test_one_ticks_deliveries_commit_together_but_a_poison_one_is_refused_alone(
    start, monkeypatch
):
    """A trigger, two replies for the same job and a poison reply, handed over in the same
    loop tick (their batches go to the journal's group commit together): the poison one is
    refused alone, the others commit, and each is acked only once committed."""
    rig = await start(PAIR)
    pair, other = JOB, "8b2c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
    fresh = "9c3d4e2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
    await rig.trigger("pair", {"n": 1}, pair)[1]
    await rig.trigger("two", {"n": 2}, other)[1]
    a, b = await rig.request("a", 1), await rig.request("b", 1)
    waiting = await rig.request("a", 2)
    assert (a.correlation_id, b.correlation_id, waiting.correlation_id) == (
        f"{pair}:a", f"{pair}:b", f"{other}:a",
    )  # fmt: skip
    _inject(monkeypatch, "recorder")

    committed_at_ack: dict[str | None, bool] = {}
    real_ack = rig.transport.ack

    def ack(delivery: Any) -> None:
        # What a crash right after this ack would leave: the journal must hold the delivery.
        with sqlite3.connect(rig.db) as conn:
            if delivery.queue.endswith(".jobs"):
                found = conn.execute("SELECT 1 FROM jobs WHERE id = ?", (fresh,)).fetchall()
            else:
                job, _, step = (delivery.correlation_id or "").partition(":")
                found = conn.execute(
                    "SELECT 1 FROM events WHERE kind = 'replied' AND job_id = ? AND step = ?",
                    (job, step),
                ).fetchall()
        committed_at_ack[delivery.correlation_id] = bool(found)
        real_ack(delivery)

    monkeypatch.setattr(rig.transport, "ack", ack)
    handled = [  # no await between them: the same loop tick
        rig.trigger("two", {"n": 3}, fresh)[1],
        rig.answer(a, {"x": 1})[1],
        rig.answer(b, {"y": 2})[1],
        rig.answer(waiting, {"poison": "x"})[1],
    ]
    await asyncio.gather(*handled)

    # The poison reply alone was refused: dead-lettered and acked; its step still waits.
    (dead,) = rig.transport.sent_to("wm.dead")
    assert dead.correlation_id == f"{other}:a"
    assert rig.orchestrator.state.jobs[other].steps["a"].status == "running"
    # The others committed, each before its ack, and their work went out.
    assert committed_at_ack == {
        fresh: True, f"{pair}:a": True, f"{pair}:b": True, f"{other}:a": False,
    }  # fmt: skip
    c = await rig.request("c")
    assert c.correlation_id == f"{pair}:c" and json.loads(c.body) == {"x": 1, "y": 2}
    assert (await rig.request("a", 3)).correlation_id == f"{fresh}:a"
