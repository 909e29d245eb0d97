"""The manager's settings, and the queues its workflows use."""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from payload_refs import DEFAULT_THRESHOLD
from workflow_manager.config import Workflow
from workflow_manager.config.joblimits import JobLimit
from workflow_manager.limits import DEFAULT_JSON_DEPTH, DEFAULT_LIMITS
from workflow_manager.transport import DEFAULT_QUEUE, MAX_MESSAGE_BYTES

__all__ = [
    "DEFAULT_JSON_DEPTH",
    "HttpSettings",
    "ManagerSettings",
    "WILDCARD_HOSTS",
    "advertised_url",
    "step_queues",
]


class ManagerSettings(BaseModel):
    """How the manager talks to RabbitMQ and keeps its journal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    amqp_url: str = Field(default="amqp://guest:guest@localhost:5672/", repr=False)
    queue: str = DEFAULT_QUEUE
    prefetch: int = Field(default=256, ge=1)
    max_message_bytes: int = Field(default=MAX_MESSAGE_BYTES, ge=1024)
    # A publish that failed while the connection still looked up is tried again this soon.
    publish_retry_s: float = Field(default=0.25, gt=0)
    retention_days: float = Field(default=7.0, gt=0)
    retention_every_s: float = Field(default=3600.0, gt=0)
    # Run events on the broker's `<queue>.events` exchange: job.* only, step.* too, or none.
    events: Literal["jobs", "steps", "off"] = "jobs"
    # All top-level jobs running at once, every workflow together; None: no bound.
    max_running_jobs: int | None = Field(default=None, ge=1)
    # The workflow file's nested limits (`limits:`), in file order.
    job_limits: tuple[JobLimit, ...] = ()
    # Several managers on one PostgreSQL journal: its number of partitions (None: one manager).
    partitions: int | None = Field(default=None, ge=1, le=1024)
    # A partition's lease lasts this long unless renewed (every lease_renew_s): a dead
    # manager's partitions are taken over this long after its last renewal.
    lease_ttl_s: float = Field(default=3.0, gt=0)
    lease_renew_s: float = Field(default=1.0, gt=0)
    # Limits that hold across the cluster (a step's concurrency or rate, max_running_jobs,
    # limits:): each partition's quota is reviewed this often (workflow_manager/cluster/quotas.py);
    # waiting work may wait this long for its partition's first quota.
    quota_tick_s: float = Field(default=0.2, gt=0)
    # Where the other managers reach this one's HTTP API (requests about the jobs it runs).
    advertise_url: str | None = None
    # Limits (docs/security.md). JSON nested deeper is refused before anything changes:
    # triggers, replies, signals, x-meta, x-meta-patch, HTTP bodies. orjson writes at most
    # 254 levels, so the journal could not hold deeper values anyway.
    max_json_depth: int = Field(default=DEFAULT_JSON_DEPTH, ge=64, le=250)
    # A task step's children's inputs together (each child copies the step's other input
    # keys): a fan-out past this fails its step, saying the size, before any child starts.
    max_fanout_bytes: int = Field(default=DEFAULT_LIMITS["max_fanout_bytes"], ge=1024)
    # Payloads by reference (docs/protocol.md): where large values are stored (`NAME=URL`;
    # None: nowhere, references pass through untouched), the size past which a trigger's,
    # a reply's or a signal's top-level values are stored, and how long after its top-level
    # job ended a job's values stay (retention looks this often).
    payload_store: str | None = None
    payload_ref_threshold: int = Field(default=DEFAULT_THRESHOLD, ge=1024)
    payload_retention_s: float = Field(default=3600.0, ge=0)
    payload_sweep_every_s: float = Field(default=300.0, gt=0)


class HttpSettings(BaseModel):
    """Limits and browser-session settings of the HTTP server (docs/security.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # A request body past this is refused with 413 as it streams in (never buffered whole).
    max_body_bytes: int = Field(default=MAX_MESSAGE_BYTES, ge=1024)
    # The request line and headers together; past it the connection is answered 431.
    max_header_bytes: int = Field(default=DEFAULT_LIMITS["max_header_bytes"], ge=1024)
    # The path and query string; past it 414.
    max_url_bytes: int = Field(default=DEFAULT_LIMITS["max_url_bytes"], ge=256)
    # A kept-alive connection idle this long is closed.
    idle_timeout_s: float = Field(default=DEFAULT_LIMITS["idle_timeout_s"], gt=0)
    # A request's headers and body must have arrived this long after it began (slow clients).
    request_timeout_s: float = Field(default=DEFAULT_LIMITS["request_timeout_s"], gt=0)
    # Open connections at once; past it new requests are answered 503.
    max_connections: int = Field(default=DEFAULT_LIMITS["max_connections"], ge=1)
    # Open event streams (GET /api/events) at once; past it 503.
    max_event_streams: int = Field(default=DEFAULT_LIMITS["max_event_streams"], ge=1)
    # Host headers answered besides the bound address, localhost and 127.0.0.1 / [::1].
    allowed_hosts: tuple[str, ...] = ()
    # A web UI session (after POST /ui/login) lasts this long.
    session_ttl_s: float = Field(default=DEFAULT_LIMITS["session_ttl_s"], gt=0)
    # Proxies whose X-Forwarded-Proto / X-Forwarded-For are believed (uvicorn's
    # forwarded_allow_ips): "" none, "*" any, else a comma-separated list of addresses.
    forwarded_allow_ips: str = ""
    # Wrong logins answered per client address and minute; past it 429 with Retry-After.
    login_attempts_per_minute: int = Field(
        default=DEFAULT_LIMITS["login_attempts_per_minute"], ge=1
    )


WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]"})
"""Addresses that mean "listen on every interface"."""


def advertised_url(host: str, port: int) -> str:
    """The URL of an API listening on `host`:`port`, as another machine would call it: a
    wildcard address (listening on every interface) names this machine instead."""
    if host in WILDCARD_HOSTS:
        host = socket.gethostname()
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address in a URL
    return f"http://{host}:{port}"


def step_queues(workflows: Iterable[Workflow]) -> list[str]:
    """Every queue a step of these workflows (their tasks and branches too) sends requests to.

    A step's compensation's queue too: it gets requests when the step's job fails later;
    and a task step's reducer's (`reduce`).
    A waiting step (`wait: true`) has none.
    """
    queues: dict[str, None] = {}
    for workflow in workflows:
        for flow in (workflow, *workflow.tasks, *workflow.branches.values()):
            sent = (step for step in flow.steps if step.task is None and not step.wait)
            queues.update((step.queue_name, None) for step in sent)
            queues.update(
                (step.compensate.queue_name, None) for step in flow.steps if step.compensate
            )
            queues.update((s.fallback.queue_name, None) for s in flow.steps if s.fallback)
            queues.update((s.reduce_step.queue_name, None) for s in flow.steps if s.reduce_step)
    return list(queues)
