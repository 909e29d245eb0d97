"""The kit as a library call and its exit codes when there is nothing to test."""

from __future__ import annotations

import aio_pika

from workflow_manager.conformance import KitSettings, Status, run_conformance

from .kinds import GOOD_WORKERS
from .kitrun import run_kit

STORE_RULES = ("payload-ref", "payload-ref-missing")


async def test_without_echo_or_a_failing_input_error_reply_is_skipped(start_worker, amqp_url):
    queue, _worker = await start_worker(GOOD_WORKERS[0])
    seen = []
    settings = KitSettings(queue=queue, amqp_url=amqp_url, input={"section": "a b"}, timeout_s=5)

    report = await run_conformance(settings, on_verdict=seen.append)

    assert list(report.verdicts) == seen  # each verdict was reported as it was reached
    assert report.verdict("error-reply").status is Status.SKIP
    assert "no --failing-input given" in report.verdict("error-reply").reason
    for rule in STORE_RULES:
        assert report.verdict(rule).status is Status.SKIP
        assert "no --payload-store given" in report.verdict(rule).reason
    skipped = {"error-reply", *STORE_RULES}
    assert {v.status for v in report.verdicts if v.rule not in skipped} == {Status.PASS}
    assert (report.passed, report.exit_code) == (True, 0)


async def test_without_echo_a_resolved_reference_passes_on_any_json_reply(
    start_worker, amqp_url, payload_store
):
    queue, _worker = await start_worker(GOOD_WORKERS[0])
    settings = KitSettings(
        queue=queue, amqp_url=amqp_url, input={"section": "a b"}, timeout_s=5,
        payload_store=payload_store,
    )  # fmt: skip

    report = await run_conformance(settings)

    assert {report.verdict(rule).status for rule in STORE_RULES} == {Status.PASS}, report


async def test_a_payload_store_the_kit_cannot_write_exits_3(start_worker, amqp_url, unique):
    queue, _worker = await start_worker(GOOD_WORKERS[0])
    store = f"nowhere=file:///proc/{unique}/payloads"  # /proc takes no new directories

    run = await run_kit(queue, "--amqp-url", amqp_url, "--payload-store", store, "--timeout", "5")

    assert run.code == 3, run.output
    assert (
        f"error: the kit cannot store its value in --payload-store nowhere=file:///proc/{unique}"
        in run.output
    )
    assert "Traceback" not in run.output


async def test_a_queue_nobody_consumes_exits_3(amqp_url, unique):
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        await channel.declare_queue(f"{unique}.idle", durable=True)
        try:
            run = await run_kit(f"{unique}.idle", "--amqp-url", amqp_url)
        finally:
            await channel.queue_delete(f"{unique}.idle")
    assert run.code == 3, run.output
    assert f"error: no worker consumes queue '{unique}.idle': start the worker first" in run.output


async def test_a_missing_queue_exits_3(amqp_url, unique):
    run = await run_kit(f"{unique}.missing", "--amqp-url", amqp_url)
    assert run.code == 3, run.output
    assert f"no queue '{unique}.missing' on the broker: start the worker first" in run.output


async def test_an_unreachable_broker_exits_3_without_showing_the_password(unique):
    run = await run_kit(unique, "--amqp-url", "amqp://guest:s3cret@127.0.0.1:1/", "--timeout", "2")
    assert run.code == 3, run.output
    assert "error: cannot connect to RabbitMQ at amqp://guest:***@127.0.0.1:1/" in run.output
    assert "s3cret" not in run.output and "Traceback" not in run.output
