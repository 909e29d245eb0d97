"""`GET /metrics/cluster`: every manager's metrics summed (pure: texts in, one text out), and
the route on a partitioned manager whose members answer, or do not."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from workflow_manager.api import ApiToken, create_app
from workflow_manager.api.clustermetrics import (
    MEMBERS,
    UNREACHED,
    MemberMetrics,
    sum_expositions,
)
from workflow_manager.api.forwarding import FORWARDED_BY, Forwarder
from workflow_manager.metrics import Metrics

from .clusterfakes import ME, THERE, Peers, Service, Table

P = "workflow_manager_"
ONE = f"""\
# HELP {P}jobs_finished_total Top-level jobs ended.
# TYPE {P}jobs_finished_total counter
{P}jobs_finished_total{{workflow="a",status="completed"}} 3.0
{P}jobs_finished_total{{workflow="a",status="failed"}} 1.0
# HELP {P}jobs_finished_created Top-level jobs ended.
# TYPE {P}jobs_finished_created gauge
{P}jobs_finished_created{{workflow="a",status="completed"}} 1.7e9
# HELP {P}jobs_running Top-level jobs running now.
# TYPE {P}jobs_running gauge
{P}jobs_running{{workflow="a"}} 2.0
# HELP {P}job_duration_seconds Top-level jobs: seconds.
# TYPE {P}job_duration_seconds histogram
{P}job_duration_seconds_bucket{{workflow="a",le="1.0"}} 1.0
{P}job_duration_seconds_bucket{{workflow="a",le="+Inf"}} 4.0
{P}job_duration_seconds_count{{workflow="a"}} 4.0
{P}job_duration_seconds_sum{{workflow="a"}} 9.5
# HELP {P}lease_renewal_seconds Seconds the last renewal took.
# TYPE {P}lease_renewal_seconds gauge
{P}lease_renewal_seconds 0.25
"""
TWO = f"""\
# HELP {P}jobs_finished_total Top-level jobs ended.
# TYPE {P}jobs_finished_total counter
{P}jobs_finished_total{{workflow="a",status="completed"}} 5.0
{P}jobs_finished_total{{workflow="b",status="completed"}} 7.0
# HELP {P}jobs_running Top-level jobs running now.
# TYPE {P}jobs_running gauge
{P}jobs_running{{workflow="a"}} 1.0
# HELP {P}job_duration_seconds Top-level jobs: seconds.
# TYPE {P}job_duration_seconds histogram
{P}job_duration_seconds_bucket{{workflow="a",le="1.0"}} 2.0
{P}job_duration_seconds_bucket{{workflow="a",le="+Inf"}} 2.0
{P}job_duration_seconds_count{{workflow="a"}} 2.0
{P}job_duration_seconds_sum{{workflow="a"}} 1.0
# HELP {P}lease_renewal_seconds Seconds the last renewal took.
# TYPE {P}lease_renewal_seconds gauge
{P}lease_renewal_seconds 0.5
"""


def samples(text: bytes | str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition text, by name and labels."""
    decoded = text.decode() if isinstance(text, bytes) else text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(decoded)
        for s in family.samples
    }


def test_counters_gauges_and_histograms_of_the_same_name_and_labels_are_added_up() -> None:
    summed = samples(sum_expositions(MemberMetrics({"m1": ONE, "m2": TWO})))
    finished = f"{P}jobs_finished_total"
    assert summed[(finished, (("status", "completed"), ("workflow", "a")))] == 8.0
    assert summed[(finished, (("status", "failed"), ("workflow", "a")))] == 1.0
    assert summed[(finished, (("status", "completed"), ("workflow", "b")))] == 7.0
    assert summed[(f"{P}jobs_running", (("workflow", "a"),))] == 3.0
    bucket = f"{P}job_duration_seconds_bucket"
    assert summed[(bucket, (("le", "1.0"), ("workflow", "a")))] == 3.0
    assert summed[(bucket, (("le", "+Inf"), ("workflow", "a")))] == 6.0
    assert summed[(f"{P}job_duration_seconds_count", (("workflow", "a"),))] == 6.0
    assert summed[(f"{P}job_duration_seconds_sum", (("workflow", "a"),))] == 10.5
    assert not any(name.endswith("_created") for name, _ in summed)  # no sum of times
    # A timing per manager is kept per manager, never added up.
    renewal = f"{P}lease_renewal_seconds"
    assert summed[(renewal, (("manager", "m1"),))] == 0.25
    assert summed[(renewal, (("manager", "m2"),))] == 0.5
    assert summed[(MEMBERS, ())] == 2.0
    assert summed[(UNREACHED, ())] == 0.0


def test_a_member_missing_or_sending_no_metrics_is_left_out_and_counted() -> None:
    text = sum_expositions(MemberMetrics({"m1": ONE, "m3": "this is { not metrics"}, ["m2"]))
    summed = samples(text)
    assert summed[(f"{P}jobs_running", (("workflow", "a"),))] == 2.0  # m1's alone
    assert summed[(MEMBERS, ())] == 1.0
    assert summed[(UNREACHED, ())] == 2.0  # m2 not reached, m3's text unreadable


def test_a_managers_own_metrics_sum_to_themselves() -> None:
    metrics = Metrics(["a"])
    own = metrics.render().decode()
    summed = samples(sum_expositions(MemberMetrics({"m1": own})))
    renewal = f"{P}lease_renewal_seconds"
    left_out = ("_created", renewal)
    theirs = {k: v for k, v in samples(own).items() if not k[0].endswith(left_out)}
    ours = {k: v for k, v in summed.items() if k[0] not in (MEMBERS, UNREACHED, renewal)}
    assert ours == theirs
    assert summed[(renewal, (("manager", "m1"),))] == 0.0


@pytest.fixture
def peers() -> Peers:
    async def there(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/metrics" and request.headers[FORWARDED_BY] == ME
        return httpx.Response(200, text=TWO, headers={"content-type": "text/plain"})

    return Peers(answers={"there": there})  # AWAY cannot be reached


async def app_client(service: Service, peers: Peers) -> AsyncIterator[httpx.AsyncClient]:
    forwarder = Forwarder(httpx.MockTransport(peers))
    app = create_app(service, forwarder=forwarder, metrics=_Fixed(ONE))  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://here:8080") as http:
        yield http
    await forwarder.close()


class _Fixed:
    content_type = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self, text: str) -> None:
        self.text = text

    def render(self) -> bytes:
        return self.text.encode()


async def test_the_route_sums_the_members_that_answer_and_counts_those_that_do_not(
    peers: Peers,
) -> None:
    async for http in app_client(Service(Table()), peers):
        response = await http.get("/metrics/cluster")
    assert response.status_code == 200, response.text
    summed = samples(response.text)
    finished = f"{P}jobs_finished_total"
    assert summed[(finished, (("status", "completed"), ("workflow", "a")))] == 8.0  # ME + THERE
    assert summed[(f"{P}lease_renewal_seconds", (("manager", THERE),))] == 0.5
    assert summed[(MEMBERS, ())] == 2.0
    assert summed[(UNREACHED, ())] == 1.0  # AWAY
    assert {r.url.host for r in peers.got} == {"there", "away"}


async def test_unpartitioned_the_route_answers_as_metrics(peers: Peers) -> None:
    service = Service(Table())
    service.directory = None
    async for http in app_client(service, peers):
        cluster, own = await http.get("/metrics/cluster"), await http.get("/metrics")
    assert cluster.status_code == 200 and cluster.text == own.text == ONE
    assert peers.got == []


async def test_like_metrics_it_needs_no_token(peers: Peers) -> None:
    service = Service(Table())
    service.directory = None
    app = create_app(service, metrics=_Fixed(ONE), api_token=ApiToken("s3cret-" + "x" * 24))  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://here:8080") as http:
        cluster, jobs = await http.get("/metrics/cluster"), await http.get("/api/jobs")
    assert (cluster.status_code, jobs.status_code) == (200, 401)
    operation = app.openapi()["paths"]["/metrics/cluster"]["get"]
    assert operation["security"] == [] and "401" not in operation["responses"]
