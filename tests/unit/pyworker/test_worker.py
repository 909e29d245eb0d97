"""Worker registration and configuration, before any connection is made."""

from __future__ import annotations

import pytest

from pyworker import SettingsError, StepDefinitionError, Worker, WorkerStateError


def test_step_registers_and_returns_the_function_unchanged():
    worker = Worker(environ={})

    def count(data):
        return {"n": len(data)}

    assert worker.step("count")(count) is count
    assert list(worker.handlers) == ["count"]
    assert worker.handlers["count"].func is count
    assert count({"a": 1}) == {"n": 1}


def test_one_handler_per_queue():
    worker = Worker(environ={})

    @worker.step("count")
    def first(data): ...

    with pytest.raises(StepDefinitionError, match="'count' is already handled by .*first"):

        @worker.step("count")
        def second(data): ...


def test_a_bad_signature_fails_at_decoration_time():
    worker = Worker(environ={})

    with pytest.raises(StepDefinitionError, match="takes no parameters"):

        @worker.step("q")
        def nothing(): ...

    assert not worker.handlers


def test_configure_overrides_settings_and_ignores_none():
    worker = Worker("amqp://a:secret@host/", prefetch=3, environ={})

    worker.configure(amqp_url=None, prefetch=7)

    assert worker.settings.amqp_url == "amqp://a:secret@host/"
    assert worker.settings.prefetch == 7
    with pytest.raises(SettingsError, match="prefetch"):
        worker.configure(prefetch=0)


def test_repr_is_short_and_hides_the_password():
    worker = Worker("amqp://a:secret@host/", environ={})

    @worker.step("b")
    def b(data): ...

    assert repr(worker) == "<Worker amqp://a:******@host/ steps=[b] prefetch=10 new>"


async def test_starting_without_steps_is_an_error():
    with pytest.raises(WorkerStateError, match="no steps registered"):
        await Worker(environ={}).start()


async def test_an_invalid_url_from_the_environment_fails_at_start_not_at_construction():
    worker = Worker(environ={"AMQP_URL": "localhost"})

    @worker.step("q")
    def q(data): ...

    with pytest.raises(SettingsError, match="environment variable AMQP_URL"):
        await worker.start()
    assert not worker.running


async def test_stop_before_start_is_a_no_op():
    await Worker(environ={}).stop()


async def test_a_queue_prefix_that_makes_a_bad_queue_name_fails_at_start():
    worker = Worker(queue_prefix="amq.", environ={})

    @worker.step("q")
    def q(data): ...

    with pytest.raises(SettingsError, match="queue_prefix 'amq.' makes a bad queue name"):
        await worker.start()


async def test_a_bad_reconnect_interval_in_the_url_is_a_settings_error():
    # amqp_outage raises its own ReconnectSettingsError; the worker answers in its own tree.
    worker = Worker(amqp_url="amqp://127.0.0.1:1/?reconnect_interval=soon", environ={})

    @worker.step("q")
    def q(data): ...

    with pytest.raises(SettingsError, match="reconnect_interval must be .* not 0"):
        await worker.start()
    assert not worker.running
