"""The test's side of the fuzz (test_fuzz.py): the messages it sends, the worker it plays on
the step queue `{prefix}.s`, and the ledger it checks the manager against.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from dataclasses import dataclass, field
from typing import Any

import aio_pika

ENDED = {"completed", "failed", "cancelled"}
BATCH_TIMEOUT_S = 10.0
# How a worker's reply names the step: right, in upper case, a wrong step, no step at all.
TARGETS = {"exact": "{job}:s", "upper": "{JOB}:s", "other": "{job}:zz", "bare": "{job}"}
TARGETS |= {"extra": "{job}:s:x"}
# How a trigger's correlation id carries its job id (or none), and whether that is valid;
# any other form is garbage text. uuid.UUID reads hex, braces and urn: either fate is fine.
ID_FORMS = {"none": True, "empty": True, "canonical": True, "upper": True}
ID_FORMS |= {"hex": None, "braces": None, "urn": None}


@dataclass(frozen=True)
class Body:
    """A message body and whether the protocol accepts it as a payload (None: either is fine)."""

    data: bytes
    valid: bool | None

    def __repr__(self) -> str:
        return f"Body({self.data[:60]!r}{'...' if len(self.data) > 60 else ''}, {self.valid})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # how hypothesis prints it
        printer.text(repr(self))


EMPTY = Body(b"{}", True)


@dataclass(frozen=True)
class Reply:
    target: str  # a key of TARGETS; for a stray reply, the correlation id itself
    body: Body
    headers: dict[str, Any]


@dataclass(frozen=True)
class Trigger:
    workflow: tuple[Any, bool] | None  # (header value, is it our workflow); None: no header
    body: Body
    id_form: str
    reply_to: bool
    duplicate: bool
    attempts: list[list[Reply]]  # the worker's replies to each attempt; [] is silence


def plain(body: Body, reply: Body = EMPTY, headers: dict[str, Any] | None = None) -> Trigger:
    """A trigger the manager must accept, whose step gets `reply` on every attempt."""
    replies = [[Reply("exact", reply, headers or {})]] * 2
    return Trigger(("fz", True), body, "canonical", True, False, replies)


def expected_accept(case: Trigger) -> bool | None:
    """Whether the manager must accept the trigger (True), refuse it (False), or either."""
    checks = [case.workflow[1] if case.workflow else False, case.body.valid]
    checks.append(ID_FORMS.get(case.id_form, False))
    return False if False in checks else None if None in checks else True


def correlation_id(form: str, job: uuid.UUID) -> str | None:
    forms = {"none": None, "empty": "", "canonical": str(job), "upper": str(job).upper()}
    forms |= {"hex": job.hex, "braces": f"{{{job}}}", "urn": job.urn}
    return forms.get(form, form)


def malformed(cid: str | None) -> bool:
    """A reply the protocol cannot route: its correlation id is not '<job>:<step>'."""
    job, sep, step = (cid or "").partition(":")
    return not (job and sep and step)


def _uuid(value: str | None) -> str | None:
    try:
        return str(uuid.UUID(value or ""))
    except ValueError:
        return None


def _tag() -> str:
    # Our own consumer tags: aiormq draws them from `random`, which hypothesis reseeds.
    return f"fuzz.{uuid.uuid4().hex}"


@dataclass
class Sent:
    """One trigger message as published, and the answers to it."""

    case: Trigger
    message_id: str
    job_id: str  # the canonical id, if the correlation id names one
    reply_to: bool
    answers: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def names_job(self) -> bool:
        """The trigger's correlation id is `job_id` in some form the manager may accept."""
        return _uuid(correlation_id(self.case.id_form, uuid.UUID(self.job_id))) == self.job_id


class Fuzz:
    """Publishes the drawn messages, plays the step's worker, and keeps the ledger."""

    def __init__(self, sys: Any) -> None:
        self.sys = sys
        self.plans: dict[str, list[list[Reply]]] = {}
        self.sent: list[Sent] = []
        self.accepted: set[str] = set()  # job ids
        self.rejected: set[str] = set()  # message ids
        self.dead: set[str] = set()  # message ids
        self.dead_seen = asyncio.Condition()
        self.expected_dead: set[str] = set()

    async def start(self) -> None:
        channel = self.sys.channel
        step = await channel.declare_queue(f"{self.sys.prefix}.s", durable=True)
        await step.consume(self._serve, consumer_tag=_tag())
        dead = await channel.declare_queue(f"{self.sys.manager.queue}.dead", durable=True)
        await dead.consume(self._on_dead, no_ack=True, consumer_tag=_tag())

    async def _on_dead(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with self.dead_seen:
            self.dead.add(message.message_id or "")
            self.dead_seen.notify_all()

    async def _serve(self, request: aio_pika.abc.AbstractIncomingMessage) -> None:
        await request.ack()
        job_id = (request.correlation_id or "").partition(":")[0]
        attempt = int((request.headers or {}).get("x-attempt", 1))
        plan = self.plans.get(job_id, [[Reply("exact", EMPTY, {})]])
        for reply in plan[attempt - 1] if attempt <= len(plan) else []:
            cid = TARGETS[reply.target].format(job=job_id, JOB=job_id.upper())
            await self.publish_reply(request.reply_to or "", cid, reply)

    async def publish_reply(self, queue: str, cid: str | None, reply: Reply) -> None:
        message_id = str(uuid.uuid4())
        if malformed(cid):
            self.expected_dead.add(message_id)
        message = aio_pika.Message(
            reply.body.data, headers=reply.headers, correlation_id=cid, message_id=message_id
        )
        await self.sys.channel.default_exchange.publish(message, queue)

    async def trigger(self, case: Trigger) -> list[Sent]:
        """Publish the trigger (twice if `duplicate`), each with its own reply queue."""
        job = uuid.uuid4()
        self.plans[str(job)] = case.attempts
        cid = correlation_id(case.id_form, job)
        reply_to = case.reply_to or cid in (None, "")  # a job nobody can name must answer
        headers = {"workflow": case.workflow[0]} if case.workflow else {}
        sent = []
        for _ in range(2 if case.duplicate else 1):
            one = Sent(case, str(uuid.uuid4()), str(job), reply_to)
            queue_name = None
            if reply_to:
                queue = await self.sys.channel.declare_queue(exclusive=True)
                answer = functools.partial(self._on_answer, one)
                await queue.consume(answer, no_ack=True, consumer_tag=_tag())
                queue_name = queue.name
            message = aio_pika.Message(
                case.body.data, headers=headers, correlation_id=cid,
                reply_to=queue_name, message_id=one.message_id,
            )  # fmt: skip
            await self.sys.channel.default_exchange.publish(message, self.sys.trigger_queue)
            sent.append(one)
        self.sent.extend(sent)
        return sent

    async def _on_answer(self, sent: Sent, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        status = (message.headers or {}).get("x-status")
        status = status.decode() if isinstance(status, bytes | bytearray) else str(status)
        sent.answers.append((status, message.correlation_id, message.body))
        sent.answered.set()

    async def run_batch(
        self, cases: list[Trigger], stray_replies: list[Reply], timeout_s: float = BATCH_TIMEOUT_S
    ) -> list[str]:
        """Send one example's messages; returns each trigger's fate once all have settled."""
        groups = [await self.trigger(case) for case in cases]
        for stray in stray_replies:
            await self.publish_reply(self.sys.manager.queue, stray.target, stray)
        statuses = []
        async with asyncio.timeout(timeout_s):
            for group in groups:
                fates = [await self.settled(one) for one in group]
                if group[0].names_job:  # a duplicate trigger: the same job, the same fate
                    assert len(set(fates)) == 1, (fates, group[0].case)
                statuses += fates
        process = self.sys.manager.process
        assert process.proc.returncode is None, f"manager exited:\n{process.output}"
        return statuses

    async def settled(self, one: Sent) -> str:
        """Wait for the trigger's fate and check it against the case; returns the status."""
        expected = expected_accept(one.case)
        if one.reply_to:
            await one.answered.wait()
            status, cid, body = one.answers[0]
            assert status in ENDED | {"rejected"}, (status, body[:200])
        else:
            status, cid = await self._fate_without_answer(one)
        assert expected is None or (status != "rejected") == expected, (status, one.case)
        if status == "rejected":
            self.rejected.add(one.message_id)
            await self.dead_letter(one.message_id)
            return status
        assert _uuid(cid) is not None, cid
        if one.names_job:
            assert cid == one.job_id, (cid, one.job_id)  # the canonical id, whatever the form
        self.accepted.add(cid)
        assert await self.job_status(cid) == status
        return status

    async def _fate_without_answer(self, one: Sent) -> tuple[str, str | None]:
        """Poll until the job has ended or the trigger is a dead letter."""
        while one.message_id not in self.dead:
            status = await self.job_status(one.job_id, missing_ok=True)
            if status in ENDED:
                return status, one.job_id
            await asyncio.sleep(0.05)
        return "rejected", None

    async def job_status(self, job_id: str, missing_ok: bool = False) -> str | None:
        response = await self.sys.http.get(f"/api/job/{job_id}")
        if response.status_code == 404 and missing_ok:
            return None
        assert response.status_code == 200, (job_id, response.text)
        return response.json()["status"]

    async def dead_letter(self, message_id: str) -> None:
        async with self.dead_seen:
            await self.dead_seen.wait_for(lambda: message_id in self.dead)

    async def check_the_end(self) -> None:
        """After every batch: nothing lost, nothing answered twice, the manager unharmed."""
        async with asyncio.timeout(10):  # a dead letter for each unroutable reply too
            for message_id in self.expected_dead:
                await self.dead_letter(message_id)
        assert self.dead == self.expected_dead | self.rejected
        for one in self.sent:
            assert len(one.answers) == (1 if one.reply_to else 0), (one, one.answers)
        for job_id in self.accepted:
            assert await self.job_status(job_id) in ENDED, job_id
        process = self.sys.manager.process
        assert process.proc.returncode is None, process.output
        assert (await self.sys.http.get("/healthz")).status_code == 200
        for bad in ("Traceback", " ERROR ", " CRITICAL "):
            assert bad not in process.output, process.output

    async def restart_after_crash(self) -> None:
        """If the manager died, drop what killed it (back in its queue) and start it again."""
        if self.sys.manager.process.proc.returncode is None:
            return
        channel, name = self.sys.channel, self.sys.manager.queue
        async with asyncio.timeout(10):
            while True:
                queue = await channel.declare_queue(name, passive=True)
                if not queue.declaration_result.consumer_count:
                    break  # the broker dropped its consumer: its unacked messages are back
                await asyncio.sleep(0.05)
        await queue.purge()
        await self.sys.restart()
