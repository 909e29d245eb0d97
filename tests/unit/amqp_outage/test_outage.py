"""The pure parts of amqp_outage: the reconnect schedule, the outage tracker's log lines and
the filter deciding which aio-pika/aiormq records pass. Time is an injected clock."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiormq.exceptions import (
    AuthenticationError,
    ChannelInvalidStateError,
    ChannelNotFoundEntity,
    ConnectionClosed,
)

from amqp_outage import (
    Backoff,
    DisconnectNoiseFilter,
    Outage,
    PromptRobustConnection,
    ReconnectSettingsError,
    is_disconnect,
    quiet_disconnect_noise,
)


class Clock:
    """A hand-moved monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def attempt_times(backoff: Backoff, clock: Clock, until_s: float) -> list[float]:
    """When aio-pika's loop would try (attempts take no time): try, sleep interval_s, repeat."""
    start = clock.now
    backoff.lost()
    times = []
    while clock.now - start <= until_s:
        times.append(round(clock.now - start, 2))
        clock.now += backoff.interval_s
    return times


# -- Backoff --------------------------------------------------------------------------------


def test_the_default_schedule_is_prompt_and_grows_to_five_seconds():
    clock = Clock()

    times = attempt_times(Backoff(clock=clock), clock, until_s=30)

    assert times[:5] == [0.0, 0.5, 1.0, 1.5, 2.0]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(0.5 <= gap <= 5.0 for gap in gaps)
    assert gaps == sorted(gaps), "waits never shrink during one outage"
    assert gaps[-1] == 5.0
    # The promise: once the broker is back, the next attempt comes within ~25% of the outage.
    for back_at in (3.0, 5.0, 8.0, 12.0):
        late_s = next(t for t in times if t >= back_at) - back_at
        assert late_s <= max(0.5, 0.25 * back_at) + 0.01, (back_at, times)


def test_fraction_one_doubles_each_wait():
    clock = Clock()

    times = attempt_times(Backoff(fraction=1.0, clock=clock), clock, until_s=20)

    assert times == [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 13.0, 18.0]


def test_a_restored_connection_starts_the_next_outage_prompt_again():
    clock = Clock()
    backoff = Backoff(clock=clock)
    backoff.lost()
    clock.now += 60

    assert backoff.interval_s == 5.0
    backoff.restored()
    assert backoff.interval_s == 0.5
    clock.now += 60
    backoff.lost()
    assert backoff.interval_s == 0.5


def test_a_second_loss_report_does_not_restart_the_schedule():
    clock = Clock()
    backoff = Backoff(clock=clock)
    backoff.lost()
    clock.now += 10

    backoff.lost()

    assert backoff.down_for_s() == 10
    assert backoff.interval_s == 2.5


@pytest.mark.parametrize("bad", [{"first_s": 0}, {"first_s": -1}, {"fraction": 0}])
def test_bad_backoff_parameters_are_refused_by_name(bad):
    with pytest.raises(ReconnectSettingsError, match="reconnect backoff"):
        Backoff(**bad)


async def test_the_connection_follows_its_backoff_and_sleeps_a_probes_tick():
    clock = Clock()
    connection = PromptRobustConnection("amqp://guest:guest@127.0.0.1/", clock=clock)

    assert connection.backoff.interval_s == 0.5
    connection.close_callbacks.__call__(ConnectionClosed(320, "CONNECTION_FORCED"))
    clock.now += 12
    assert connection.backoff.interval_s == 3.0
    # aio-pika's own sleep between tries: short, the attempt itself waits its turn.
    assert connection.reconnect_interval == 0.1
    connection.reconnect_callbacks.__call__()
    assert connection.backoff.interval_s == 0.5


async def test_the_urls_reconnect_interval_sets_the_first_wait():
    connection = PromptRobustConnection("amqp://h/?reconnect_interval=2", max_interval_s=1)

    assert connection.backoff.interval_s == 2.0
    assert connection.backoff.max_s == 2.0
    with pytest.raises(ReconnectSettingsError, match="reconnect_interval must be .* not 'soon'"):
        connection.reconnect_interval = "soon"


# -- Outage ---------------------------------------------------------------------------------


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "test.outage"]


@pytest.fixture
def tracked(caplog: pytest.LogCaptureFixture) -> tuple[Outage, Clock]:
    caplog.set_level(logging.DEBUG, logger="test.outage")
    clock = Clock()
    return Outage("broker link", logger=logging.getLogger("test.outage"), clock=clock), clock


def test_an_outage_logs_one_warning_and_one_info(tracked, caplog):
    outage, clock = tracked
    assert outage.connected and outage.down_for_s is None

    assert outage.lost(ConnectionClosed(320, "CONNECTION_FORCED - shutdown")) is True
    clock.now += 2.5
    assert outage.down_for_s == 2.5
    assert not outage.connected
    assert outage.lost(ConnectionRefusedError(111, "refused")) is False  # the same outage
    for _ in range(40):
        outage.held("replies not sent")
    outage.held("acks not sent", 3)
    clock.now += 1.0
    assert outage.restored() is True
    assert outage.restored() is False

    assert lines(caplog) == [
        ("WARNING", "broker link lost (ConnectionClosed: [Errno 320] CONNECTION_FORCED - "
         "shutdown); reconnecting"),
        ("INFO", "broker link restored after 3.5s; held back: 40 replies not sent, "
         "3 acks not sent"),
    ]  # fmt: skip
    assert outage.connected and outage.down_for_s is None
    assert outage.held_counts == {}
    assert outage.outages == 1


def test_an_outage_with_nothing_held_says_so(tracked, caplog):
    outage, clock = tracked
    outage.lost("socket closed")
    clock.now += 0.25
    outage.restored()

    assert lines(caplog)[-1] == ("INFO", "broker link restored after 0.2s; nothing held back")


def test_reminders_come_at_most_every_thirty_seconds(tracked, caplog):
    outage, clock = tracked
    outage.lost(OSError("Connect call failed"))
    outage.held("publishes")

    reminded = []
    for _ in range(95):  # one check a second for 95 s
        clock.now += 1
        reminded.append(outage.remind())

    assert [i + 1 for i, r in enumerate(reminded) if r] == [30, 60, 90]
    assert lines(caplog)[1] == (
        "WARNING",
        "broker link still down after 30s (OSError: Connect call failed); held back: 1 publishes",
    )
    outage.restored()
    clock.now += 100
    assert outage.remind() is False
    assert len(lines(caplog)) == 5


def test_a_deliberate_close_is_no_outage(tracked, caplog):
    outage, _clock = tracked
    outage.close()

    assert outage.lost(ConnectionClosed(320, "closed")) is False
    assert outage.connected
    assert lines(caplog) == []


def test_a_long_cause_is_cut_to_one_short_line(tracked, caplog):
    outage, _clock = tracked
    outage.lost("line one\nline two " + "x" * 1000)

    message = lines(caplog)[0][1]
    assert "\n" not in message and len(message) < 400 and "line one line two" in message


async def test_publishers_wait_for_the_connection_on_an_event(tracked):
    outage, _clock = tracked
    await outage.wait_connected(timeout_s=0)  # connected: returns at once
    outage.lost("gone")
    waiter = asyncio.create_task(outage.wait_connected(timeout_s=5))
    await asyncio.sleep(0)
    assert not waiter.done()
    with pytest.raises(TimeoutError):
        await outage.wait_connected(timeout_s=0.01)

    outage.restored()

    await asyncio.wait_for(waiter, 1)


async def test_a_single_timer_writes_the_reminders_while_an_event_loop_runs():
    reminded = asyncio.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "still down" in record.getMessage():
                reminded.set()

    logger = logging.getLogger("test.outage.timer")
    logger.addHandler(watch := Watch())
    try:
        outage = Outage("link", logger=logger, remind_every_s=0.05)
        outage.lost("gone")

        await asyncio.wait_for(reminded.wait(), 5)
        outage.restored()
    finally:
        logger.removeHandler(watch)
    assert outage.connected


# -- the log filter -------------------------------------------------------------------------


def record(name: str, msg: str, *args: object, exc: BaseException | None = None):
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, exc_info)


CONNECTION = "<RobustConnection amqp://guest:******@127.0.0.1:5672/>"


@pytest.mark.parametrize(
    ("rec", "kept"),
    [
        # aio-pika's reconnect loop, per attempt
        (record("aio_pika.robust_connection", 'Connection attempt to "%s" failed: %s. '
                "Reconnecting after %r seconds.", CONNECTION, ConnectionRefusedError(111), 0.5),
         False),
        (record("aio_pika.robust_connection", "Connection to %s closed. Reconnecting after "
                "%r seconds.", CONNECTION, 0.5), False),
        # a refusal retrying cannot fix is shown on every attempt
        (record("aio_pika.robust_connection", 'Connection attempt to "%s" failed: %s. '
                "Reconnecting after %r seconds.", CONNECTION, AuthenticationError("ACCESS")),
         True),
        (record("aio_pika.robust_connection", "Reconnect attempt failed %s due to %s: %s.",
                CONNECTION, "KeyError", KeyError("x")), True),
        # callbacks failing because the channel went with the connection
        (record("aio_pika.tools", "Callback %r error: %s: %s", "cb", "ChannelInvalidStateError",
                ChannelInvalidStateError("closed")), False),
        (record("aio_pika.tools", "Full traceback for callback %r error", "cb",
                exc=ConnectionClosed(320, "CONNECTION_FORCED")), False),
        (record("aio_pika.tools", "Callback %r error: %s: %s", "cb", "CancelledError",
                asyncio.CancelledError()), False),
        # a real bug in a callback still shows
        (record("aio_pika.tools", "Callback %r error: %s: %s", "cb", "ZeroDivisionError",
                ZeroDivisionError("division by zero")), True),
        (record("aio_pika.tools", "Full traceback for callback %r error", "cb",
                exc=TypeError("bad")), True),
        # a channel error is not a disconnect: a missing queue must show
        (record("aio_pika.tools", "Callback %r error: %s: %s", "cb", "ChannelNotFoundEntity",
                ChannelNotFoundEntity(404, "NOT_FOUND")), True),
        # aiormq, per attempt and per loss
        (record("aiormq.connection", "error when creating transport: %r",
                ConnectionRefusedError(111, "refused")), False),
        (record("aiormq.connection", 'Unexpected connection close from remote "%s", '
                "Connection.Close(reply_code=%r, reply_text=%r)", CONNECTION, 320, "shutdown"),
         False),
        (record("aiormq.connection", "Cancelling cause reader exited abnormally",
                exc=ConnectionResetError(104, "reset")), False),
        (record("aiormq.connection", "Got frame for closed channel %d: %r", 3, "frame"), True),
        (record("aiormq.channel", "Consumer callback failed", exc=ValueError("bug")), True),
    ],
)  # fmt: skip
def test_the_filter_drops_disconnect_noise_only(rec, kept):
    assert DisconnectNoiseFilter().filter(rec) is kept


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ConnectionClosed(320, "CONNECTION_FORCED"), True),
        (ConnectionResetError(104, "reset"), True),
        (ChannelInvalidStateError("No active transport"), True),
        (asyncio.CancelledError(), True),
        (TimeoutError(), True),
        (AuthenticationError("ACCESS_REFUSED"), False),
        (ChannelNotFoundEntity(404, "NOT_FOUND"), False),
        (RuntimeError("bug"), False),
        (
            RuntimeError('<Connection: "amqp://guest:******@127.0.0.1:5672/" at 0x7f6d> closed'),
            True,
        ),
        (RuntimeError("<Connection> closed? no: a bug"), False),
        (None, False),
    ],
)
def test_is_disconnect(exc, expected):
    assert is_disconnect(exc) is expected


def test_installing_the_filter_twice_adds_it_once():
    name = "test.outage.noisy"
    logger = logging.getLogger(name)
    try:
        quiet_disconnect_noise([name])
        quiet_disconnect_noise([name])

        assert sum(isinstance(f, DisconnectNoiseFilter) for f in logger.filters) == 1
    finally:
        for installed in list(logger.filters):
            logger.removeFilter(installed)
