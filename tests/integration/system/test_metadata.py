"""Job metadata end to end: `x-meta` on every request (children too), patches from replies."""

from __future__ import annotations

import json
import signal
import uuid

import aio_pika

from ..harness import take_one
from .test_cli import cli

WORKFLOWS = """
workflows:
  - name: tagged
    steps:
      - {name: meta-first, queue: "{p}.meta-first"}
      - {name: fan, task: t, depends: [meta-first]}
      - {name: meta-last, depends: [fan], queue: "{p}.meta-last"}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - {name: meta-leaf, queue: "{p}.meta-leaf"}
"""
QUEUES = ["meta-first", "meta-leaf", "meta-last"]


async def test_x_meta_reaches_every_request_and_a_patch_reaches_later_ones(system):
    sys = await system(WORKFLOWS, step_queues=QUEUES)
    queue = await sys.reply_queue()
    job_id = str(uuid.uuid4())
    message = aio_pika.Message(
        json.dumps({"items": [1, 2]}).encode(),
        headers={"workflow": "tagged", "x-meta": json.dumps({"tenant": "acme"})},
        correlation_id=job_id,
        reply_to=queue.name,
    )
    await sys.channel.default_exchange.publish(message, sys.trigger_queue)
    outcome = await sys.next_outcome(queue)
    assert outcome.status == "completed", outcome.body
    # Each child got meta-first's patch (children carry their job's metadata).
    after_first = {"tenant": "acme", "by": {"meta-first": True}}
    assert outcome.body["items"] == [{"seen": after_first}, {"seen": after_first}]
    # The last step saw every patch before it, deep-merged.
    merged = {"tenant": "acme", "by": {"meta-first": True, "meta-leaf": True}}
    assert outcome.body["meta_meta-last"] == merged
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    assert job["meta"] == {"tenant": "acme", "by": {**merged["by"], "meta-last": True}}
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    assert page["meta"] == job["meta"]
    first = next(step for step in page["steps"] if step["name"] == "meta-first")
    assert first["output"]["meta_meta-first"] == {"tenant": "acme"}


async def test_http_takes_meta_as_a_query_parameter_or_header_and_refuses_a_bad_one(system):
    sys = await system(WORKFLOWS, step_queues=QUEUES)
    answer = await sys.http.post(
        "/api/workflow/tagged", params={"meta": '{"tenant": "globex"}'}, json={"items": []}
    )
    assert answer.status_code == 200, answer.text
    job_id = answer.json()["id"]
    outcome = await sys.outcome_of(job_id, "tagged")
    assert outcome.body["meta_meta-last"]["tenant"] == "globex"
    bad = await sys.http.post("/api/workflow/tagged", headers={"x-meta": "[1]"}, json={})
    assert bad.status_code == 400
    assert "header 'x-meta' must be a JSON object, got a list" in bad.text


async def test_submit_takes_meta_from_the_command_line(system, amqp_url):
    sys = await system(WORKFLOWS, step_queues=QUEUES)
    code, out, err = await cli(
        "submit", "tagged", "--payload", '{"items": [1]}', "--meta", '{"tenant": "cli"}',
        "--wait", "--amqp-url", amqp_url, "--queue", sys.manager.queue,
        "--api-url", sys.manager.api_url,
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)["result"]
    assert result["items"] == [{"seen": {"tenant": "cli", "by": {"meta-first": True}}}]
    code, _, err = await cli("submit", "tagged", "--meta", "[1]")
    assert code == 2 and "--meta: '[1]' is not a JSON object" in err


CHAIN = """
workflows:
  - name: chain
    steps:
      - {name: one, queue: "{p}.one"}
      - {name: two, depends: [one], queue: "{p}.two"}
"""


async def test_the_metadata_and_its_patches_survive_a_kill_9(system):
    sys = await system(CHAIN)
    job_id = str(uuid.uuid4())
    message = aio_pika.Message(
        b"{}", headers={"workflow": "chain", "x-meta": '{"tenant": "acme"}'}, correlation_id=job_id
    )
    await sys.channel.default_exchange.publish(message, sys.trigger_queue)
    one = await sys.take("one")
    assert json.loads(one.headers["x-meta"]) == {"tenant": "acme"}
    await sys.answer(one, b"{}", **{"x-meta-patch": '{"seen": ["one"]}'})
    two = await sys.take("two")
    assert json.loads(two.headers["x-meta"]) == {"tenant": "acme", "seen": ["one"]}
    await sys.restart(signal.SIGKILL)  # recovery replays the submission and the patch
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    assert job["status"] == "running"
    assert job["meta"] == {"tenant": "acme", "seen": ["one"]}
    await sys.answer(two, b"{}", **{"x-meta-patch": '{"seen": ["two"]}'})
    outcome = await sys.outcome_of(job_id, "chain")
    assert outcome.status == "completed"
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    assert job["meta"] == {"tenant": "acme", "seen": ["two"]}  # a list is replaced, not merged


PER_TENANT = """
workflows:
  - name: per-tenant
    concurrency: {limit: 1, key: meta.tenant}
    steps:
      - {name: work, queue: "{p}.work"}
"""


async def test_a_concurrency_key_on_meta_tenant_limits_each_tenant(system):
    sys = await system(PER_TENANT)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.work", durable=True)

    async def submit(tenant: str) -> str:
        answer = await sys.http.post(
            "/api/workflow/per-tenant", params={"meta": json.dumps({"tenant": tenant})}, json={}
        )
        assert answer.status_code == 200, answer.text
        return answer.json()["id"]

    first, second, other = await submit("acme"), await submit("acme"), await submit("globex")
    held = [await take_one(queue), await take_one(queue)]  # one per tenant runs
    tenants = sorted(json.loads(r.headers["x-meta"])["tenant"] for r in held)
    assert tenants == ["acme", "globex"]
    assert {r.correlation_id.partition(":")[0] for r in held} == {first, other}
    assert (await sys.http.get(f"/api/job/{second}")).json()["status"] == "queued"
    await sys.answer(next(r for r in held if r.correlation_id.startswith(first)), b"{}")
    started = await take_one(queue)  # acme's slot is free: the queued acme job starts
    assert started.correlation_id == f"{second}:work"
    for request in (started, next(r for r in held if r.correlation_id.startswith(other))):
        await sys.answer(request, b"{}")
    for job_id in (first, second, other):
        assert (await sys.outcome_of(job_id, "per-tenant")).status == "completed"
