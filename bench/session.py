"""One benchmark run's world: unique queue names, the worker processes, managers, clean-up."""

from __future__ import annotations

import contextlib
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aio_pika
from aiormq.exceptions import AMQPConnectionError, AMQPError

from bench.baseline import BaselineDriver
from bench.journals import Journals
from bench.managed import ManagerDriver
from bench.pinning import Pinner
from bench.procs import BenchError, Child, start_manager, start_workers, wait_for_consumers
from bench.shapes import STEP_QUEUES, workflow_yaml
from workflow_manager.cluster.partitioning import partition_queue
from workflow_manager.transport import manager_queues

__all__ = ["BrokerUnreachable", "ManagedRun", "Session", "SessionOptions"]


class BrokerUnreachable(BenchError):
    """RabbitMQ cannot be reached."""


@dataclass(frozen=True)
class SessionOptions:
    """Where the broker is and how the no-op workers run."""

    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    workers: int = 1
    worker_prefetch: int = 100
    driver_prefetch: int = 256  # the manager's default prefetch, for the baseline's replies
    postgres_url: str | None = None  # --db: journals in this PostgreSQL database


@dataclass
class ManagedRun:
    """Manager processes on one fresh journal and the driver that triggers their jobs."""

    processes: list[Child]
    driver: ManagerDriver
    db: str  # their --db
    queue: str

    @property
    def process(self) -> Child:
        """The first manager (the only one, without partitions)."""
        return self.processes[0]


class Session:
    """Owns the run's prefix, temporary directory, connection, workers and the queues to delete.

    With a `pinner` (--pin), the managers and workers it starts are pinned as they start.
    """

    def __init__(self, options: SessionOptions, pinner: Pinner | None = None) -> None:
        self.options = options
        self.pinner = pinner
        self.prefix = f"bench{uuid.uuid4().hex[:8]}."
        self._stack = contextlib.AsyncExitStack()
        self._queues: dict[str, None] = {}
        self._managers = 0
        self._baseline: BaselineDriver | None = None
        self.workers: list[Child] = []
        self.tmp = Path()
        self.journals = Journals(self.tmp, None)
        self.connection: aio_pika.abc.AbstractConnection | None = None

    @property
    def name(self) -> str:
        """The connection name RabbitMQ shows for this run."""
        return f"bench {self.prefix}"

    @property
    def config(self) -> Path:
        return self.tmp / "workflows.yaml"

    def owns(self, *queues: str) -> None:
        """Delete these queues when the session ends."""
        self._queues.update(dict.fromkeys(queues))

    async def __aenter__(self) -> Session:
        try:
            self.connection = await aio_pika.connect(
                self.options.amqp_url, client_properties={"connection_name": self.name}
            )
        except (AMQPConnectionError, OSError) as exc:
            raise BrokerUnreachable(
                f"cannot reach RabbitMQ at {self.options.amqp_url}: {exc} "
                "(start it: rabbitmq-server -detached)"
            ) from exc
        try:
            await self._start()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def _start(self) -> None:
        assert self.connection is not None
        self.tmp = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
        self.journals = Journals(self.tmp, self.options.postgres_url)
        self._stack.callback(self.journals.close)
        self.config.write_text(workflow_yaml(self.prefix))
        steps = [self.prefix + name for name in STEP_QUEUES]
        self.owns(*steps)
        self.workers = await start_workers(
            self.options.workers,
            self.prefix,
            self.options.worker_prefetch,
            self.options.amqp_url,
            self.pinner.helper if self.pinner else None,
        )
        channel = await self.connection.channel()
        await wait_for_consumers(channel, steps, self.options.workers, timeout_s=60)
        await channel.close()

    async def baseline(self) -> BaselineDriver:
        """The zero-overhead driver (opened on first use)."""
        if self._baseline is None:
            assert self.connection is not None
            self.owns(f"{self.prefix}baseline")
            self._baseline = await BaselineDriver.open(
                self.connection, self.prefix, self.options.driver_prefetch
            )
        return self._baseline

    @contextlib.contextmanager
    def driving_baseline(self) -> Iterator[None]:
        """The block runs the baseline driver in this process: with --pin, this process takes
        the measured core for the block (the manager's while the manager runs), then goes back
        to the others' cores as the manager's client."""
        if self.pinner is None:
            yield
            return
        self.pinner.driver()
        try:
            yield
        finally:
            self.pinner.client()

    @contextlib.asynccontextmanager
    async def manager(
        self, count: int = 1, partitions: int | None = None, sqlite: bool = False
    ) -> AsyncIterator[ManagedRun]:
        """`count` fresh managers (own queue, one fresh journal, `--partitions` when given) for
        the duration of the block; `sqlite`: the journal is a SQLite file even with --db."""
        assert self.connection is not None
        self._managers += 1
        queue = f"{self.prefix}wm{self._managers}"
        outcomes = f"{queue}.outcomes"
        self.owns(*manager_queues(queue), outcomes)
        self.owns(*(partition_queue(queue, k) for k in range(partitions or 0)))
        db = self.journals.new(f"wm{self._managers}", sqlite)
        processes: list[Child] = []
        try:
            for _ in range(count):
                processes.append(
                    await start_manager(
                        self.config,
                        db,
                        queue,
                        self.options.amqp_url,
                        partitions,
                        self.pinner.manager if self.pinner else None,
                    )
                )
            driver = await ManagerDriver.open(self.connection, f"{queue}.jobs", outcomes)
            try:
                yield ManagedRun(processes, driver, db, queue)
            finally:
                await driver.close()
        finally:
            codes = [await process.stop() for process in reversed(processes)]
        for process, code in zip(reversed(processes), codes, strict=True):
            if code != 0:
                raise BenchError(f"a manager exited with {code}:\n{process.output}")

    @contextlib.asynccontextmanager
    async def own_manager(
        self, scenario: str, workflows: str, db: str, prefix: str, *queues: str
    ) -> AsyncIterator[Child]:
        """A manager of one scenario's own (the opt-in ones): `workflows` written to its
        config, the journal `db`, the manager queue `<prefix>wm` and the step `queues` owned
        (deleted at the end); stopped on the way out, BenchError naming `scenario` when it
        did not exit cleanly."""
        config = self.tmp / f"{scenario}.yaml"
        config.write_text(workflows)
        queue = f"{prefix}wm"
        self.owns(*manager_queues(queue), f"{queue}.outcomes", *queues)
        pin = self.pinner.manager if self.pinner else None
        process = await start_manager(config, db, queue, self.options.amqp_url, None, pin)
        try:
            yield process
        finally:
            code = await process.stop(timeout_s=120)
        if code != 0:
            raise BenchError(
                f"the {scenario} scenario's manager exited with {code}:\n{process.output}"
            )

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            for worker in self.workers:
                await worker.stop()
            if self.connection is not None and not self.connection.is_closed:
                await self.connection.close()
            await self._delete_queues()
        finally:
            await self._stack.aclose()

    async def _delete_queues(self) -> None:
        """Delete every queue of the run, on a fresh connection (the run's may be gone)."""
        if not self._queues:
            return
        try:
            connection = await aio_pika.connect(self.options.amqp_url)
            async with connection:
                channel = await connection.channel()
                for name in list(self._queues):
                    await channel.queue_delete(name)
                    del self._queues[name]
        except (AMQPError, OSError) as exc:
            left = " ".join(self._queues)
            print(f"warning: could not delete queues ({exc}); left: {left}", file=sys.stderr)
