"""Signed webhooks, end to end: a real manager and worker; a source of each signature kind.

Good requests start jobs that complete; a bad signature is 401, a stale timestamp 400; a
redelivery answers the same job ids and starts nothing. A missing secret stops the start.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import time
from typing import Any

from ..harness import Process

SECRETS = {"GH_SECRET": "gh-integration-secret", "SHOP_SECRET": "whsec_integration"}
SECRETS["OWN_SECRET"] = "own-integration-secret"
WORKFLOWS = """
webhooks:
  - {name: gh, secret_env: GH_SECRET, signature: github}
  - {name: shop, secret_env: SHOP_SECRET, signature: stripe, tolerance_s: 60}
  - {name: own, secret_env: OWN_SECRET, signature: hmac-sha256, tolerance_s: 60}
workflows:
  - name: on-push
    triggers: [{webhook: gh, when: "ref == 'refs/heads/main'", payload: "{commit: after}"}]
    steps: [{name: build, queue: "{p}.build"}]
  - name: on-paid
    triggers: [{webhook: shop, when: "type == 'invoice.paid'", payload: "data.object"}]
    steps: [{name: book, queue: "{p}.book"}]
  - name: on-order
    triggers: [{webhook: own, payload: "{order: order}"}]
    steps: [{name: ship, queue: "{p}.ship"}]
"""
PAID = {"id": "evt_1", "type": "invoice.paid", "data": {"object": {"n": 1}}}


def _hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def github(body: dict[str, Any], delivery: str, secret: str = SECRETS["GH_SECRET"]) -> dict:
    raw = json.dumps(body).encode()
    headers = {
        "X-Hub-Signature-256": "sha256=" + _hex(secret, raw),
        "X-GitHub-Delivery": delivery,
        "Content-Type": "application/json",
    }
    return {"content": raw, "headers": headers}


def stripe(body: dict[str, Any], at: float) -> dict:
    raw = json.dumps(body).encode()
    t = str(int(at))
    signature = _hex(SECRETS["SHOP_SECRET"], t.encode() + b"." + raw)
    return {"content": raw, "headers": {"Stripe-Signature": f"t={t},v1={signature}"}}


def own(body: dict[str, Any], at: float, delivery: str) -> dict:
    raw = json.dumps(body).encode()
    t = str(int(at))
    headers = {
        "X-Webhook-Timestamp": t,
        "X-Webhook-Signature": "sha256=" + _hex(SECRETS["OWN_SECRET"], t.encode() + b"." + raw),
        "X-Webhook-Id": delivery,
    }
    return {"content": raw, "headers": headers}


async def _completed(sys_, job_id: str) -> dict:
    return await sys_.until(f"/api/job/{job_id}", lambda job: job.get("status") == "completed")


async def test_each_kind_starts_jobs_refuses_forgeries_and_answers_redeliveries(system):
    sys_ = await system(WORKFLOWS, step_queues=["build", "book", "ship"], manager_env=SECRETS)
    hooks: list[tuple[str, dict]] = [
        ("gh", github({"ref": "refs/heads/main", "after": "abc"}, "d-1")),
        ("shop", stripe(PAID, time.time())),
        ("own", own({"order": 7}, time.time(), "o-1")),
    ]
    started: dict[str, list[dict]] = {}
    for name, request in hooks:
        response = await sys_.http.post(f"/hooks/{name}", **request)
        assert response.status_code == 200, response.text
        started[name] = response.json()["jobs"]
        assert len(started[name]) == 1 and not started[name][0]["duplicate"]
    payloads = {"gh": {"commit": "abc"}, "shop": {"n": 1}, "own": {"order": 7}}
    for name, (job,) in started.items():
        done = await _completed(sys_, job["id"])
        assert done["workflow"] == job["workflow"]
        result = done["result"]  # the one step's output: its input (the mapped payload), traced
        assert {k: result.get(k) for k in payloads[name]} == payloads[name], result

    # Redelivered (Stripe and ours re-sign with a fresh timestamp): the same jobs, no new one.
    again = [
        ("gh", github({"ref": "refs/heads/main", "after": "abc"}, "d-1")),
        ("shop", stripe(PAID, time.time())),
        ("own", own({"order": 7}, time.time(), "o-1")),
    ]
    for name, request in again:
        response = await sys_.http.post(f"/hooks/{name}", **request)
        assert response.json()["jobs"] == [{**started[name][0], "duplicate": True}]
    listed = (await sys_.http.get("/api/workflow/on-push")).json()
    assert listed["completed"] == [started["gh"][0]["id"]]

    # Forged: a wrong secret is 401; a timestamp outside the tolerance is 400.
    bad = github({"ref": "refs/heads/main", "after": "x"}, "d-2", secret="guess")
    assert (await sys_.http.post("/hooks/gh", **bad)).status_code == 401
    old = time.time() - 120
    stale_stripe = stripe({"id": "evt_2", "type": "invoice.paid", "data": {"object": {}}}, old)
    assert (await sys_.http.post("/hooks/shop", **stale_stripe)).status_code == 400
    assert (await sys_.http.post("/hooks/own", **own({"order": 8}, old, "o-2"))).status_code == 400
    await sys_.manager.process.wait_for_line(r"webhook gh: request refused \(bad_signature, 401\)")
    assert SECRETS["GH_SECRET"] not in sys_.manager.process.output

    metrics = (await sys_.http.get("/metrics")).text
    for line in (
        'workflow_manager_webhook_requests_total{outcome="accepted",webhook="gh"} 1.0',
        'workflow_manager_webhook_requests_total{outcome="duplicate",webhook="shop"} 1.0',
        'workflow_manager_webhook_requests_total{outcome="bad_signature",webhook="gh"} 1.0',
        'workflow_manager_webhook_requests_total{outcome="stale",webhook="own"} 1.0',
    ):
        assert line in metrics


async def test_a_missing_secret_stops_the_manager_at_start(tmp_path, unique, amqp_url):
    config = tmp_path / "workflows.yaml"
    config.write_text(WORKFLOWS.replace("{p}", unique))
    env = {name: value for name, value in SECRETS.items() if name != "SHOP_SECRET"}
    process = await Process.start(
        "manager",
        sys.executable, "-m", "workflow_manager", "serve", "--config", str(config),
        "--queue", f"{unique}.wm", "--amqp-url", amqp_url, "--db", str(tmp_path / "wm.db"),
        "--port", "0",
        env={**env, "SHOP_SECRET": ""},
    )  # fmt: skip
    assert await process.exited() == 1
    assert "webhook 'shop'" in process.output and "SHOP_SECRET is empty" in process.output
