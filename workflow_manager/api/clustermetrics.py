"""`GET /metrics/cluster`: every manager's metrics summed, so one scrape of any manager is right
for the whole cluster.

The manager asked reads its own metrics from memory and asks each other live member that
advertises its API for its `/metrics` (with `x-wm-forwarded-by`), within `MEMBER_TIMEOUT_S`
and `MAX_MEMBER_BYTES`. The texts are parsed with prometheus_client's parser and summed
(`sum_expositions`, pure): samples of the same name and labels are added up, counters,
gauges and histogram buckets, `_sum` and `_count` alike: every gauge of ours is a count
(jobs running, publishes in flight, partitions held, 1 per manager connected to the broker),
so its sum is the cluster's. The one that is not, `lease_renewal_seconds` (a per-manager
timing), keeps one series per manager with a `manager` label. `_created` series are left
out (a sum of creation times means nothing). A member that does not answer in time, answers
something else than 200, or sends too much is left out of the sum, logged, and counted in
`workflow_manager_cluster_members_unreached`; the answer is still 200.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from workflow_manager.api.forwarding import FORWARDED_BY
from workflow_manager.cluster.directory import Peer
from workflow_manager.lazymodules import lazy_module

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy_module("httpx")  # loaded when a peer is first asked

__all__ = [
    "MAX_MEMBER_BYTES",
    "MEMBERS",
    "MEMBER_TIMEOUT_S",
    "PER_MANAGER",
    "UNREACHED",
    "MemberMetrics",
    "read_members",
    "sum_expositions",
]

log = logging.getLogger(__name__)

MEMBER_TIMEOUT_S = 2.0
MAX_MEMBER_BYTES = 4 * 1024 * 1024
UNREACHED = "workflow_manager_cluster_members_unreached"
MEMBERS = "workflow_manager_cluster_members_summed"
PER_MANAGER = frozenset({"workflow_manager_lease_renewal_seconds"})
"""Gauges that are no count: kept per manager (a `manager` label), never summed."""

_Key = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True)
class MemberMetrics:
    """What the members said: each answering manager's exposition text by name, and the
    names of those that gave none."""

    texts: dict[str, str]
    unreached: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Family:
    name: str
    documentation: str
    type: str
    values: dict[_Key, float] = field(default_factory=dict)


class _Summed(Collector):
    """The summed families, for `generate_latest` to write."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self._families


def sum_expositions(members: MemberMetrics) -> bytes:
    """One exposition text: the samples of every text in `members` summed by name and labels
    (per-manager gauges labelled instead), with how many members were summed and unreached.
    A text that is not in the Prometheus text format counts as unreached."""
    families: dict[str, _Family] = {}
    parsed_by: dict[str, list[Metric]] = {}
    unreached = list(members.unreached)
    for manager in sorted(members.texts):
        try:
            parsed_by[manager] = list(text_string_to_metric_families(members.texts[manager]))
        except ValueError as err:
            log.warning("/metrics/cluster: the metrics of %s are left out: %s", manager, err)
            unreached.append(manager)
    for manager, parsed_families in parsed_by.items():
        for parsed in parsed_families:
            if parsed.name.endswith("_created"):
                continue
            family = families.setdefault(
                parsed.name, _Family(parsed.name, parsed.documentation, parsed.type)
            )
            for sample in parsed.samples:
                if sample.name.endswith("_created"):
                    continue
                labels = dict(sample.labels)
                if parsed.name in PER_MANAGER:
                    labels["manager"] = manager
                key = (sample.name, tuple(sorted(labels.items())))
                family.values[key] = family.values.get(key, 0.0) + sample.value
    out = [_metric(family) for family in families.values()]
    out.append(_gauge(MEMBERS, "Managers whose metrics this answer sums.", len(parsed_by)))
    out.append(
        _gauge(
            UNREACHED,
            "Managers of the cluster whose metrics are missing from this answer (they could "
            "not be asked in time).",
            len(unreached),
        )
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Summed(out))
    return generate_latest(registry)


def _metric(family: _Family) -> Metric:
    metric = Metric(family.name, family.documentation, family.type)
    for (name, labels), value in family.values.items():
        metric.add_sample(name, dict(labels), value)
    return metric


def _gauge(name: str, documentation: str, value: float) -> Metric:
    metric = Metric(name, documentation, "gauge")
    metric.add_sample(name, {}, float(value))
    return metric


async def read_members(
    client: httpx.AsyncClient, peers: Iterable[Peer], this_manager: str
) -> MemberMetrics:
    """Each of `peers`' `/metrics` text (asked as forwarded by `this_manager`), and the names
    of those that gave none in time."""
    listed = list(peers)
    texts = await asyncio.gather(*(_read(client, peer, this_manager) for peer in listed))
    answered = {p.name: t for p, t in zip(listed, texts, strict=True) if t is not None}
    return MemberMetrics(answered, [p.name for p in listed if p.name not in answered])


async def _read(client: httpx.AsyncClient, peer: Peer, this_manager: str) -> str | None:
    """`peer`'s metrics text, or None (logged) when it cannot give it."""
    try:
        if peer.api_url is None:
            raise _NotRead("it advertises no API URL (--advertise-url)")
        return await asyncio.wait_for(_fetch(client, peer.api_url, this_manager), MEMBER_TIMEOUT_S)
    except (httpx.HTTPError, TimeoutError, UnicodeDecodeError, _NotRead) as why:
        reason = str(why) or type(why).__name__
        log.warning("/metrics/cluster: the metrics of %s are left out: %s", peer.name, reason)
        return None


class _NotRead(Exception):
    """Why a member's metrics were not read."""


async def _fetch(client: httpx.AsyncClient, api_url: str, this_manager: str) -> str:
    headers = {FORWARDED_BY: this_manager}
    async with client.stream("GET", f"{api_url}/metrics", headers=headers) as answer:
        if answer.status_code != 200:
            raise _NotRead(f"it answered {answer.status_code}")
        body = bytearray()
        async for chunk in answer.aiter_bytes():
            body.extend(chunk)
            if len(body) > MAX_MEMBER_BYTES:
                raise _NotRead(f"it sent more than {MAX_MEMBER_BYTES} bytes")
        return body.decode()
