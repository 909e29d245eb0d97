"""POST /hooks/{name}: signed requests start jobs through the submit path, once per delivery."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import yaml

from workflow_manager.api import ApiToken, create_app
from workflow_manager.api.forwarding import FORWARDED_BY, Forwarder
from workflow_manager.api.webhooks import Webhooks
from workflow_manager.cluster.directory import Directory
from workflow_manager.config.models import WorkflowFile
from workflow_manager.errors import NotOwner
from workflow_manager.settings import HttpSettings
from workflow_manager.webhooks import resolve_secrets, sign, webhook_job_id

from .conftest import T0
from .test_api_forwarding import ME, OWNER_URL, Table

TOKEN = "a-token-of-sixteen-chars"
GH_SECRET = "gh-secret-value-1"
SHOP_SECRET = "whsec_shop_secret"
YAML = """
webhooks:
  - {name: gh, secret_env: GH_SECRET, signature: github}
  - {name: shop, secret_env: SHOP_SECRET, signature: stripe, tolerance_s: 60}
workflows:
  - name: on-push
    triggers:
      - {webhook: gh, when: "ref == 'refs/heads/main'", payload: "{commit: after}"}
    steps: [{name: build}]
  - name: on-any
    triggers: [{webhook: gh}]
    steps: [{name: note}]
  - name: on-refund
    debounce: {key: type, period: 60}
    triggers: [{webhook: shop, when: "type == 'charge.refunded'"}]
    steps: [{name: refund}]
  - name: on-paid
    triggers:
      - {webhook: shop, when: "type == 'invoice.paid'", payload: "data.object"}
      - {webhook: shop, when: "type == 'odd'", payload: "data.object.id"}
    steps: [{name: book}]
"""


@pytest.fixture
def workflows_yaml() -> str:
    return YAML


class Counted:
    """The metric's calls, as (webhook, outcome)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, webhook: str, outcome: str) -> None:
        self.calls.append((webhook, outcome))


@pytest.fixture
def counted() -> Counted:
    return Counted()


@pytest.fixture
async def client(service, clock, counted) -> AsyncIterator[httpx.AsyncClient]:
    hooks = WorkflowFile.model_validate(yaml.safe_load(YAML)).webhooks
    sources = resolve_secrets(hooks, {"GH_SECRET": GH_SECRET, "SHOP_SECRET": SHOP_SECRET})
    app = create_app(
        service, clock=clock, api_token=ApiToken(TOKEN), webhooks=Webhooks(sources, counted),
        http=HttpSettings(max_body_bytes=4096),
    )  # fmt: skip
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        yield http


def github(body: dict[str, Any], delivery: str = "d-1", secret: str = GH_SECRET) -> dict[str, Any]:
    raw = json.dumps(body).encode()
    hook = WorkflowFile.model_validate(yaml.safe_load(YAML)).webhooks[0]
    headers = {**sign(hook, secret, raw, T0), "X-GitHub-Delivery": delivery}
    return {"content": raw, "headers": {**headers, "Content-Type": "application/json"}}


def stripe(body: dict[str, Any], at: float = T0) -> dict[str, Any]:
    raw = json.dumps(body).encode()
    hook = WorkflowFile.model_validate(yaml.safe_load(YAML)).webhooks[1]
    return {"content": raw, "headers": sign(hook, SHOP_SECRET, raw, at)}


PUSH = {"ref": "refs/heads/main", "after": "abc123"}


async def test_a_signed_request_starts_one_job_per_matching_workflow(client, service, counted):
    response = await client.post("/hooks/gh", **github(PUSH))
    assert response.status_code == 200
    push_id, any_id = (webhook_job_id("gh", "d-1", name) for name in ("on-push", "on-any"))
    assert response.json() == {
        "jobs": [
            {"id": push_id, "workflow": "on-push", "duplicate": False, "debounced": False},
            {"id": any_id, "workflow": "on-any", "duplicate": False, "debounced": False},
        ],
        "refused": [],
    }
    assert service.state.jobs[push_id].payload == {"commit": "abc123"}
    assert service.state.jobs[any_id].payload == PUSH
    assert counted.calls == [("gh", "accepted")]


async def test_when_picks_the_workflows(client, service, counted):
    response = await client.post("/hooks/gh", **github({"ref": "refs/heads/dev"}))
    assert [job["workflow"] for job in response.json()["jobs"]] == ["on-any"]
    assert len(service.state.jobs) == 1


async def test_no_matching_workflow_answers_an_empty_list(client, service, counted):
    response = await client.post("/hooks/shop", **stripe({"id": "evt_1", "type": "charge.failed"}))
    assert (response.status_code, response.json()) == (200, {"jobs": [], "refused": []})
    assert not service.state.jobs
    assert counted.calls == [("shop", "no_match")]


async def test_a_redelivery_answers_the_same_jobs_and_starts_none(client, service, counted):
    first = (await client.post("/hooks/gh", **github(PUSH))).json()["jobs"]
    again = (await client.post("/hooks/gh", **github(PUSH))).json()["jobs"]
    assert [job["id"] for job in again] == [job["id"] for job in first]
    assert all(job["duplicate"] for job in again)
    assert len(service.state.jobs) == 2
    other = (await client.post("/hooks/gh", **github(PUSH, delivery="d-2"))).json()["jobs"]
    assert not {job["id"] for job in other} & {job["id"] for job in first}
    assert counted.calls == [("gh", "accepted"), ("gh", "duplicate"), ("gh", "accepted")]


async def test_a_delivery_inside_a_debounce_window_answers_the_windows_job(
    client, service, counted
):
    refund = {"type": "charge.refunded"}
    (first,) = (await client.post("/hooks/shop", **stripe({**refund, "id": "evt_1"}))).json()[
        "jobs"
    ]
    (later,) = (await client.post("/hooks/shop", **stripe({**refund, "id": "evt_2"}))).json()[
        "jobs"
    ]
    assert later == {"id": first["id"], "workflow": "on-refund", "duplicate": False,
                     "debounced": True}  # fmt: skip
    assert len(service.state.jobs) == 1
    assert counted.calls == [("shop", "accepted"), ("shop", "debounced")]


async def test_a_redelivery_after_the_job_ended_answers_it_too(client, service):
    event = {"id": "evt_paid", "type": "invoice.paid", "data": {"object": {"invoice": "in_1"}}}
    (job,) = (await client.post("/hooks/shop", **stripe(event))).json()["jobs"]
    await service.reply(job["id"], "book", {"ok": True})
    assert job["id"] not in service.state.jobs  # ended, and left memory
    # Stripe retries with a new timestamp and signature; the event id stays.
    (again,) = (await client.post("/hooks/shop", **stripe(event, at=T0 + 30))).json()["jobs"]
    assert again == {**job, "duplicate": True}


async def test_a_mapped_payload_that_is_no_object_is_refused(client, service, counted):
    event = {"id": "evt_odd", "type": "odd", "data": {"object": {"id": "x"}}}
    response = await client.post("/hooks/shop", **stripe(event))
    assert response.status_code == 200
    assert response.json()["jobs"] == []
    (refusal,) = response.json()["refused"]
    assert refusal["workflow"] == "on-paid"
    assert "payload must be a JSON object, got a string" in refusal["error"]
    assert counted.calls == [("shop", "refused")]


async def test_bad_signature_is_401_and_logged_without_secrets(client, service, counted, caplog):
    caplog.set_level(logging.INFO, "workflow_manager.api.webhooks")
    request = github(PUSH, secret="not the secret")
    response = await client.post("/hooks/gh", **request)
    assert response.status_code == 401
    assert "does not match" in response.json()["error"]
    assert not service.state.jobs
    assert counted.calls == [("gh", "bad_signature")]
    (line,) = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert "webhook gh: request refused (bad_signature, 401)" in line
    signature = request["headers"]["X-Hub-Signature-256"].removeprefix("sha256=")
    assert GH_SECRET not in caplog.text and signature not in caplog.text


async def test_unsigned_request_is_401(client, counted):
    response = await client.post("/hooks/gh", json=PUSH)
    assert response.status_code == 401
    assert "no X-Hub-Signature-256 header" in response.json()["error"]


async def test_stale_timestamp_is_400(client, service, counted):
    response = await client.post(
        "/hooks/shop", **stripe({"id": "e", "type": "invoice.paid"}, T0 - 61)
    )
    assert response.status_code == 400
    assert "more than 60 s" in response.json()["error"]
    assert not service.state.jobs
    assert counted.calls == [("shop", "stale")]


async def test_a_signed_body_that_is_no_json_object_is_400(client, counted):
    hook = WorkflowFile.model_validate(yaml.safe_load(YAML)).webhooks[0]
    response = await client.post(
        "/hooks/gh", content=b"[1]", headers=sign(hook, GH_SECRET, b"[1]", T0)
    )
    assert response.status_code == 400
    assert "must be a JSON object" in response.json()["error"]
    assert counted.calls == [("gh", "invalid_body")]


async def test_unknown_webhook_is_404_with_a_suggestion(client, counted):
    response = await client.post("/hooks/shpo", **github(PUSH))
    assert response.status_code == 404
    assert response.json()["error"] == "no webhook 'shpo' (known: gh, shop); did you mean 'shop'?"
    assert counted.calls == []


async def test_no_token_no_origin_check_no_json_type_but_the_body_limit_holds(client, service):
    request = github(PUSH)
    headers = {**request["headers"], "Content-Type": "text/plain", "Origin": "https://evil.example"}
    response = await client.post("/hooks/gh", content=request["content"], headers=headers)
    assert response.status_code == 200, response.text
    # The rest of the API still wants the token; the body limit applies to webhooks too.
    assert (await client.post("/api/workflow/on-any", json={})).status_code == 401
    big = {"ref": "x" * 5000}
    assert (await client.post("/hooks/gh", **github(big))).status_code == 413


async def test_the_route_is_in_the_openapi_document_without_the_token(client):
    schema = (
        await client.get("/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"})
    ).json()
    operation = schema["paths"]["/hooks/{name}"]["post"]
    assert operation["security"] == []
    assert {"400", "401", "404"} <= set(operation["responses"])
    assert "403" not in operation["responses"] and "415" not in operation["responses"]


class Partitioned:
    """The real service, except that `foreign`'s jobs are in partition 3, which OWNER runs."""

    def __init__(self, inner: Any, foreign: str) -> None:
        self.inner, self.foreign = inner, foreign
        self.directory = Directory(Table(), ME)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def submit(self, workflow: str, *args: Any, **kwargs: Any) -> str:
        if workflow == self.foreign:
            raise NotOwner(f"workflow {workflow}'s job is in partition 3, run by another", 3)
        return await self.inner.submit(workflow, *args, **kwargs)


async def test_a_job_of_another_managers_partition_is_started_there(service, clock, counted):
    got: list[httpx.Request] = []

    def owner(request: httpx.Request) -> httpx.Response:
        got.append(request)
        job = {"id": "job-there", "workflow": "on-any", "duplicate": False, "debounced": False}
        return httpx.Response(200, json={"jobs": [job], "refused": []})

    hooks = WorkflowFile.model_validate(yaml.safe_load(YAML)).webhooks
    sources = resolve_secrets(hooks, {"GH_SECRET": GH_SECRET, "SHOP_SECRET": SHOP_SECRET})
    forwarder = Forwarder(httpx.MockTransport(owner))
    app = create_app(
        Partitioned(service, "on-any"), clock=clock, forwarder=forwarder,
        webhooks=Webhooks(sources, counted),
    )  # fmt: skip
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://manager"
    ) as http:
        signed = github(PUSH)
        answer = (await http.post("/hooks/gh", **signed)).json()
        owner_gone = Forwarder(httpx.MockTransport(lambda r: httpx.Response(503)))
        app.state.forwarder = owner_gone
        again = await http.post("/hooks/gh", **github(PUSH, delivery="d-2"))
    await forwarder.close()
    await owner_gone.close()
    push_id = webhook_job_id("gh", "d-1", "on-push")
    assert [job["id"] for job in answer["jobs"]] == [push_id, "job-there"]
    (sent,) = got  # the same signed request, for that workflow alone, marked forwarded
    assert str(sent.url) == f"{OWNER_URL}/hooks/gh?workflow=on-any"
    assert sent.content == signed["content"]
    assert sent.headers["x-hub-signature-256"] == signed["headers"]["X-Hub-Signature-256"]
    assert sent.headers["x-github-delivery"] == "d-1" and FORWARDED_BY in sent.headers
    # That manager answering no more: the sender is told to send it again (no job is lost).
    assert again.status_code == 503 and again.headers["retry-after"] == "1"
    assert "on-any" in again.json()["error"]
    assert counted.calls == [("gh", "accepted"), ("gh", "unavailable")]


async def test_a_forwarded_request_starts_only_the_workflow_it_names(client, service, counted):
    signed = github(PUSH)
    headers = {**signed["headers"], FORWARDED_BY: "other:1"}
    answer = await client.post(
        "/hooks/gh?workflow=on-push", content=signed["content"], headers=headers
    )
    assert [job["workflow"] for job in answer.json()["jobs"]] == ["on-push"]
    assert list(service.state.jobs) == [webhook_job_id("gh", "d-1", "on-push")]
    assert counted.calls == []  # the manager that sent it on counts it
