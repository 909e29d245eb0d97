"""Run the kit: connect, check a worker is there, run each probe once, judge every rule."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import aio_pika
from aio_pika.abc import AbstractConnection
from aiormq.exceptions import AMQPError, ChannelNotFoundEntity

from payload_refs import open_store
from payload_refs.errors import PayloadRefError
from workflow_manager.conformance import probes, refprobes
from workflow_manager.conformance.model import Exchange, Status, Verdict
from workflow_manager.conformance.report import Report
from workflow_manager.conformance.rules import RULES, Expect
from workflow_manager.conformance.session import Session
from workflow_manager.conformance.settings import KitSettings
from workflow_manager.errors import BrokerError
from workflow_manager.transport.broker import mask_url

__all__ = ["run_conformance", "PROBES"]

Probe = Callable[[Session], Awaitable[object]]
PROBES: dict[str, Probe] = {
    "basic": probes.basic,
    "unknown-headers": probes.unknown_headers,
    "unicode": probes.unicode,
    "large-input": probes.large,
    "concurrency": probes.concurrency,
    "redelivery": probes.redelivery,
    "failure": probes.failure,
    "ack-order": probes.ack_order,
    "payload-ref": refprobes.payload_ref,
    "payload-ref-missing": refprobes.payload_ref_missing,
}
_STORE_PROBES = ("payload-ref", "payload-ref-missing")  # skipped without --payload-store
_BROKER_ERRORS = (AMQPError, OSError, ConnectionError, asyncio.TimeoutError)


class _Skipped:
    """A probe that was not run, and why; every rule reading it is SKIPped with that reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


async def _connect(settings: KitSettings) -> AbstractConnection:
    try:
        return await aio_pika.connect(
            settings.amqp_url,
            timeout=min(settings.timeout_s, 10.0),
            client_properties={"connection_name": f"workflow-manager conformance {settings.queue}"},
        )
    except _BROKER_ERRORS as exc:
        raise BrokerError(
            f"cannot connect to RabbitMQ at {mask_url(settings.amqp_url)}: "
            f"{exc or type(exc).__name__} (set the URL with --amqp-url or $AMQP_URL)"
        ) from exc


async def _check_worker(connection: AbstractConnection, queue: str) -> None:
    """BrokerError unless `queue` exists and something consumes it."""
    channel = await connection.channel()
    try:
        declared = await channel.declare_queue(queue, passive=True)
    except ChannelNotFoundEntity:
        raise BrokerError(
            f"no queue {queue!r} on the broker: start the worker first (it declares its queue)"
        ) from None
    consumers = declared.declaration_result.consumer_count
    if not consumers:
        raise BrokerError(f"no worker consumes queue {queue!r}: start the worker first")
    await channel.close()


def _skip_reason(probe: str, settings: KitSettings, basic: object) -> str | None:
    if probe == "failure" and settings.failing_input is None:
        return (
            'no --failing-input given (an input the worker fails on; --echo sends {"fail": true})'
        )
    if probe in _STORE_PROBES and settings.payload_store is None:
        return "no --payload-store given (NAME=URL, the store the worker has in WM_PAYLOAD_STORES)"
    if probe != "basic" and isinstance(basic, Exchange) and not basic.replies:
        return "not checked: the worker did not answer the first request (see reply-to)"
    return None


async def _observe(probe: str, session: Session, basic: object) -> object:
    reason = _skip_reason(probe, session.settings, basic)
    if reason is not None:
        return _Skipped(reason)
    try:
        return await PROBES[probe](session)
    except _BROKER_ERRORS as exc:
        raise BrokerError(f"the broker failed during the {probe!r} checks: {exc}") from exc


async def _judge_all(
    session: Session, on_verdict: Callable[[Verdict], None]
) -> tuple[Verdict, ...]:
    expect = Expect(echo=session.settings.echo)
    observations: dict[str, object] = {}
    verdicts: list[Verdict] = []
    for rule in RULES:
        if rule.probe not in observations:
            observations[rule.probe] = await _observe(
                rule.probe, session, observations.get("basic")
            )
        observation = observations[rule.probe]
        if isinstance(observation, _Skipped):
            verdict = Verdict(rule.name, Status.SKIP, observation.reason)
        else:
            verdict = rule.evaluate(observation, expect)
        verdicts.append(verdict)
        on_verdict(verdict)
    return tuple(verdicts)


async def run_conformance(
    settings: KitSettings, on_verdict: Callable[[Verdict], None] = lambda _verdict: None
) -> Report:
    """Test the worker on `settings.queue`; `on_verdict` sees each verdict as it is reached.

    Raises BrokerError when RabbitMQ cannot be reached or no worker consumes the queue, and
    StoreUnavailable when the kit cannot write to its payload store.
    """
    started_s = time.monotonic()
    spec = settings.store_spec
    store = None if spec is None else open_store(spec)
    connection = await _connect(settings)
    try:
        await _check_worker(connection, settings.queue)
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        session = Session(connection, channel, settings, store=store)
        try:
            verdicts = await _judge_all(session, on_verdict)
        finally:
            await session.forget_jobs()
    except _BROKER_ERRORS as exc:
        raise BrokerError(f"RabbitMQ failed during the checks: {exc}") from exc
    finally:
        with contextlib.suppress(*_BROKER_ERRORS):
            await connection.close()
        if store is not None:
            with contextlib.suppress(PayloadRefError, OSError):
                await store.close()
    return Report(settings.queue, verdicts, time.monotonic() - started_s)
