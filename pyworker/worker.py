"""Worker: registers step handlers and serves their queues on RabbitMQ until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType, TracebackType
from typing import Any, TypeVar

from aio_pika.abc import (
    AbstractIncomingMessage,
    AbstractQueue,
    AbstractRobustChannel,
    AbstractRobustConnection,
)
from aio_pika.exceptions import AMQPError

from amqp_outage import Outage, ReconnectSettingsError, connect, quiet_disconnect_noise
from pyworker.delivery import handle_delivery
from pyworker.draining import InFlight, wait_until_idle
from pyworker.errors import BrokerError, SettingsError, StepDefinitionError, WorkerStateError
from pyworker.handlers import StepHandler, check_queue_name, inspect_handler, prefixed_handlers
from pyworker.payloadrefs import NO_PAYLOADS, Payloads
from pyworker.settings import (
    WorkerSettings,
    mask_url,
    resolve_amqp_url,
    resolve_payloads,
    resolve_queue_prefix,
    store_entries,
)  # fmt: skip
from pyworker.signals import stopping_on_signals
from pyworker.tracing import HandlerSpans

__all__ = ["Worker"]

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

# How the end-of-outage line counts the requests a lost connection interrupted.
HELD_UNANSWERED = "requests interrupted (RabbitMQ redelivers them)"


class _State(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


class Worker:
    """Serves step handlers: consumes each step's queue and replies to the manager.

    It rides out broker outages: it reconnects promptly by itself (`amqp_outage`), logs one
    line when the connection is lost and one when it is back, and leaves the requests an
    outage interrupted to RabbitMQ's redelivery.

    Args:
        amqp_url: Broker URL. Default: $AMQP_URL, then $AMQP_SERVER, then
            `amqp://guest:guest@localhost:5672/` (read when the worker starts).
        prefetch: How many requests per step queue are handled at once.
        name: Connection name shown in RabbitMQ's management UI.
        stop_timeout_s: How long `stop()` waits for in-flight handlers before cancelling them
            (their requests are then redelivered).
        queue_prefix: Prepended to every step's queue name (e.g. "staging."). Default:
            $QUEUE_PREFIX, else none.
        environ: Environment to read the URL from (default `os.environ`); for tests.
        tracer_provider: The OpenTelemetry TracerProvider for handler spans (default: the
            global one). Used only when opentelemetry-api is installed: each handler then runs
            in a span whose parent is the request's `traceparent`.
        payload_stores: `NAME=URL` entries (`file:///dir`, `postgresql://...`) where requests'
            references are read, large replies stored (the first). Default: $WM_PAYLOAD_STORES.
        payload_ref_threshold: Reply bytes above which values are stored (default 256 KiB).

    Example:
        >>> worker = Worker(prefetch=4)
        >>> @worker.step("greet")
        ... async def greet(data: dict, ctx: StepContext) -> dict:
        ...     return {"greeting": f"hello {data['name']}"}
        >>> worker.run()  # doctest: +SKIP
    """

    def __init__(
        self,
        amqp_url: str | None = None,
        *,
        prefetch: int = 10,
        name: str | None = None,
        stop_timeout_s: float = 30.0,
        queue_prefix: str | None = None,
        environ: Mapping[str, str] | None = None,
        tracer_provider: Any = None,
        payload_stores: Sequence[str] | str | None = None,
        payload_ref_threshold: int | None = None,
    ) -> None:
        stores = store_entries(payload_stores)
        self._settings = WorkerSettings(
            amqp_url, prefetch, name, stop_timeout_s, queue_prefix, stores, payload_ref_threshold
        )
        self._environ = environ
        self._spans = HandlerSpans(tracer_provider)
        self._handlers: dict[str, StepHandler] = {}
        self._state = _State.NEW
        self._connection: AbstractRobustConnection | None = None
        self._channel: AbstractRobustChannel | None = None
        self._consumers: dict[str, tuple[AbstractQueue, str]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._payloads = NO_PAYLOADS
        self._in_flight = InFlight()
        self._outage = Outage("RabbitMQ connection", logger=log)
        self._stop_requested = asyncio.Event()
        self._stopped = asyncio.Event()

    def __repr__(self) -> str:
        url = mask_url(self._settings.amqp_url) if self._settings.amqp_url else "<env url>"
        steps = ", ".join(self._handlers)
        return (
            f"<Worker {url} steps=[{steps}] prefetch={self._settings.prefetch} {self._state.value}>"
        )

    # -- registration -------------------------------------------------------------------------

    def step(self, queue: str) -> Callable[[F], F]:
        """Register the decorated function as the handler of requests on `queue`.

        Args:
            queue: The step's queue name (the workflow step name, or its `queue:`).

        Returns:
            A decorator that registers the function and returns it unchanged.

        Raises:
            StepDefinitionError: The name is invalid, already taken, or the signature unusable.
        """
        check_queue_name(queue)

        def register(func: F) -> F:
            if queue in self._handlers:
                raise StepDefinitionError(
                    f"step {queue!r} is already handled by {self._handlers[queue].name}; "
                    "each queue has one handler per worker"
                )
            if self._state is not _State.NEW:
                raise WorkerStateError(f"cannot add step {queue!r}: the worker has started")
            self._handlers[queue] = inspect_handler(queue, func)
            return func

        return register

    @property
    def handlers(self) -> Mapping[str, StepHandler]:
        """The registered handlers by queue name (read-only)."""
        return MappingProxyType(self._handlers)

    @property
    def settings(self) -> WorkerSettings:
        """The worker's settings (frozen)."""
        return self._settings

    def configure(self, **changes: Any) -> None:
        """Override settings before start, e.g. from CLI flags; `None` values are ignored.

        Raises:
            WorkerStateError: The worker has already started.
            SettingsError: A value is invalid.
        """
        if self._state is not _State.NEW:
            raise WorkerStateError("cannot configure a worker that has already started")
        self._settings = self._settings.replace(**changes)

    @property
    def running(self) -> bool:
        """Whether the worker is connected and consuming."""
        return self._state is _State.RUNNING

    @property
    def connected(self) -> bool:
        """False while RabbitMQ is unreachable (the worker reconnects by itself)."""
        return self.running and self._outage.connected

    @property
    def in_flight(self) -> int:
        """How many requests are being handled right now."""
        return len(self._in_flight)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, declare each step queue (durable) and start consuming.

        Raises:
            WorkerStateError: No steps are registered, or the worker is already running.
            SettingsError: The URL, queue prefix or payload stores (or their env) are invalid.
            BrokerError: RabbitMQ cannot be reached or refused a declaration.
        """
        if self._state not in (_State.NEW, _State.STOPPED):
            raise WorkerStateError(f"cannot start a worker that is {self._state.value}")
        if not self._handlers:
            raise WorkerStateError(
                "no steps registered; decorate a function with @worker.step(...)"
            )
        environ = os.environ if self._environ is None else self._environ
        url = resolve_amqp_url(self._settings.amqp_url, environ)
        prefix = resolve_queue_prefix(self._settings.queue_prefix, environ)
        handlers = prefixed_handlers(self._handlers, prefix)
        stores = resolve_payloads(self._settings, environ)  # a SettingsError before opening
        self._state = _State.STARTING
        self._stopped = asyncio.Event()  # a fresh one: each start may be on a new event loop
        try:
            self._payloads = Payloads.open(*stores)
            await self._connect(url, handlers)
        except BaseException:
            await self._close()
            self._state = _State.STOPPED
            self._stopped.set()
            raise
        self._state = _State.RUNNING
        log.info("worker consuming %s on %s", ", ".join(self._consumers), mask_url(url))
        if self._payloads.stores:
            log.info("worker has %s", self._payloads.describe())

    async def _connect(self, url: str, handlers: list[StepHandler]) -> None:
        name = self._settings.name or f"pyworker {socket.gethostname()} pid={os.getpid()}"
        quiet_disconnect_noise()  # the Outage logs one line per outage instead of aio-pika's
        self._outage = Outage("RabbitMQ connection", logger=log)
        try:
            self._connection = await connect(url, name=name)
        except (AMQPError, OSError) as exc:
            raise BrokerError(
                f"cannot connect to RabbitMQ at {mask_url(url)}: {exc or type(exc).__name__} "
                "(is it running? set the URL with --amqp-url or $AMQP_URL)"
            ) from exc
        except ReconnectSettingsError as exc:  # the URL's ?reconnect_interval=
            raise SettingsError(f"AMQP URL {mask_url(url)}: {exc}") from exc
        self._connection.close_callbacks.add(self._on_connection_lost)
        self._connection.reconnect_callbacks.add(self._on_reconnected)
        sync_steps = sum(not h.is_async for h in handlers)
        self._executor = ThreadPoolExecutor(
            max_workers=max(1, sync_steps * self._settings.prefetch), thread_name_prefix="pyworker"
        )
        queue = ""
        try:
            channel = await self._connection.channel(publisher_confirms=True, on_return_raises=True)
            self._channel = channel
            await channel.set_qos(prefetch_count=self._settings.prefetch)
            for handler in handlers:
                queue = handler.queue
                declared = await channel.declare_queue(queue, durable=True)
                callback = functools.partial(self._on_message, handler)
                self._consumers[queue] = (declared, await declared.consume(callback))
        except AMQPError as exc:
            where = f"declaring/consuming queue {queue!r}" if queue else "opening a channel"
            raise BrokerError(f"RabbitMQ refused {where}: {exc}") from exc

    def _on_connection_lost(self, connection: object, exc: BaseException | None = None) -> None:
        if not getattr(connection, "close_called", False):  # not closed on purpose by stop()
            self._outage.lost(exc)

    def _on_reconnected(self, _connection: object) -> None:
        # aio-pika calls this once channels, queues and consumers are restored.
        self._outage.restored()

    async def _on_message(self, handler: StepHandler, message: AbstractIncomingMessage) -> None:
        task = asyncio.current_task()
        if self._channel is None or self._executor is None or task is None:
            return  # closed already: RabbitMQ requeued this request with the channel
        with self._in_flight.track(task):
            try:
                answered = await handle_delivery(
                    message, handler, self._channel, self._executor, self._spans, self._payloads
                )
            except asyncio.CancelledError:
                if (
                    self._state is _State.RUNNING
                ):  # not stop(): the channel went with the connection
                    self._outage.held(HELD_UNANSWERED)
                raise
        if not answered:  # counted once per outage rather than logged per request
            self._outage.held(HELD_UNANSWERED)

    async def stop(self) -> None:
        """Stop consuming, let in-flight handlers finish and reply, then disconnect.

        Handlers still running after `stop_timeout_s` are cancelled; their requests are not
        acked, so RabbitMQ redelivers them. Calling `stop()` again, or before start, is a no-op.
        """
        self._stop_requested.set()
        if self._state in (_State.NEW, _State.STOPPED):
            return
        if self._state is _State.STOPPING:
            await self._stopped.wait()
            return
        self._state = _State.STOPPING
        try:
            await self._cancel_consumers()
            await self._in_flight.drain(self._settings.stop_timeout_s)
        finally:
            await self._close()
            self._state = _State.STOPPED
            self._stopped.set()
            log.info("worker stopped")

    async def _cancel_consumers(self) -> None:
        for queue_name, (queue, tag) in self._consumers.items():
            try:
                await queue.cancel(tag)
            except (AMQPError, ConnectionError) as exc:
                log.warning("could not cancel the consumer of %r: %s", queue_name, exc)
        self._consumers.clear()
        # Deliveries read before the cancel-ok are already scheduled as tasks (aiormq, then
        # aio-pika); let them start, so they are counted as in flight before draining.
        for _ in range(3):
            await asyncio.sleep(0)

    async def _close(self) -> None:
        self._outage.close()  # closing on purpose: no outage to report
        channel, connection, executor = self._channel, self._connection, self._executor
        self._channel = self._connection = self._executor = None
        self._consumers.clear()
        for closable in (channel, connection):
            if closable is not None:
                try:
                    await closable.close()
                except (AMQPError, ConnectionError) as exc:
                    log.debug("error while closing %r: %s", closable, exc)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        payloads, self._payloads = self._payloads, NO_PAYLOADS
        await payloads.close()

    async def __aenter__(self) -> Worker:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- running ------------------------------------------------------------------------------

    async def serve(
        self, *, handle_signals: bool = False, on_start: Callable[[], None] | None = None
    ) -> None:
        """Start, handle requests until `stop()` is called (or SIGINT/SIGTERM), then stop.

        Args:
            handle_signals: Install SIGINT/SIGTERM handlers: the first signal stops gracefully,
                a second one cancels in-flight handlers.
            on_start: Called once the worker consumes its queues (e.g. to announce readiness).
        """
        self._stop_requested = asyncio.Event()
        # Installed before start(): a signal during start-up stops right after it.
        signals = (
            stopping_on_signals(self._stop_requested, self._in_flight.cancel)
            if handle_signals
            else contextlib.nullcontext()
        )
        with signals:
            await self.start()
            try:
                if on_start is not None:
                    on_start()
                await self._stop_requested.wait()
            finally:
                await self.stop()

    def run(self) -> None:
        """Serve until SIGINT or SIGTERM, then stop gracefully; blocks the calling thread.

        Raises:
            BrokerError: RabbitMQ cannot be reached at start-up.
            SettingsError: The URL or queue prefix is invalid.
        """
        asyncio.run(self.serve(handle_signals=True))

    async def run_until_idle(self, *, timeout_s: float | None = None) -> None:
        """Start, handle requests until every step queue is empty and none is in flight, then stop.

        A drain mode for tests and batch jobs.

        Args:
            timeout_s: Give up (raising TimeoutError) if the worker is not idle by then.
        """
        await self.start()
        try:
            await wait_until_idle(
                queues=lambda: [queue for queue, _ in self._consumers.values()],
                in_flight=lambda: len(self._in_flight),
                deliveries=lambda: self._in_flight.deliveries,
                timeout_s=timeout_s,
            )
        finally:
            await self.stop()
