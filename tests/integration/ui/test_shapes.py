"""The job page draws the shapes of a run: steps skipped by their `when` and the branch not
taken, fallbacks and recovered steps. The test plays the workers step by step."""

from __future__ import annotations

import json
import uuid

from .test_job_page import node, open_job

WORKFLOWS = """
workflows:
  - name: order
    steps:
      - {name: start, queue: "{p}.start"}
      - {name: ship, depends: [start], queue: "{p}.ship", when: "method != 'pickup'"}
      - {name: wrap, depends: [start], queue: "{p}.wrap"}
      - {name: join, depends: [ship, wrap], queue: "{p}.join"}
  - name: charged
    steps:
      - {name: charge, queue: "{p}.charge", fallback: {name: by-invoice, queue: "{p}.invoice"}}
      - {name: after, depends: [charge], queue: "{p}.after"}
"""


async def test_a_skipped_step_and_its_branch_are_marked(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("order", {"method": "pickup"}, job_id)
    await open_job(page, site, job_id)
    await site.answer(await site.take("start"), b'{"method": "pickup"}')
    skipped = page.locator(node("ship", "skipped"))
    await skipped.wait_for()
    # Label and icon as well as colour: the node says so in words.
    assert "skipped" in await skipped.locator("text.line").first.text_content()
    assert await skipped.locator("svg.icon.status-skipped").count() == 1
    assert "when method != 'pickup' was false" in await skipped.get_attribute("aria-label")
    dashed = await page.eval_on_selector_all(
        "svg.dag path.edge.skipped", "paths => paths.map(p => p.dataset.from + '>' + p.dataset.to)"
    )
    assert dashed == ["ship>join"]
    await site.answer(await site.take("wrap"), b"{}")
    await site.answer(await site.take("join"), b"{}")
    await page.wait_for_selector('[data-job-status="completed"]')
    assert await page.locator(node("ship", "skipped")).count() == 1


async def test_a_fallback_is_drawn_after_its_step_and_the_recovery_shows(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("charged", {}, job_id)
    await open_job(page, site, job_id)
    fallback = page.locator('[data-step="by-invoice"][data-kind="fallback"]')
    await fallback.wait_for()
    assert await fallback.get_attribute("data-status") == "pending"
    edge = page.locator('svg.dag path.edge.fallback[data-from="charge"][data-to="by-invoice"]')
    assert await edge.count() == 1
    await site.answer(await site.take("charge"), b"{}", **{"x-error": "card declined"})
    request = await site.take("invoice")
    assert json.loads(request.body)["error"]["message"] == "card declined"
    await page.wait_for_selector(node("by-invoice", "running"))
    await site.answer(request, b'{"invoice": "I-1"}')
    recovered = page.locator(node("charge", "recovered"))
    await recovered.wait_for()
    assert "recovered" in await recovered.locator("text.line").first.text_content()
    assert await recovered.locator("svg.icon.status-recovered").count() == 1
    assert "by fallback by-invoice" in await recovered.get_attribute("aria-label")
    await site.answer(await site.take("after"), b"{}")
    await page.wait_for_selector('[data-job-status="completed"]')


async def test_the_job_metadata_is_shown_as_text(site, page):
    meta = {"tenant": "acme", "note": "<b>not markup</b>"}
    answer = await site.http.post(
        "/api/workflow/charged", params={"meta": json.dumps(meta)}, json={}
    )
    assert answer.status_code == 200, answer.text
    await open_job(page, site, answer.json()["id"])
    block = page.locator("#job-meta")
    await block.wait_for()
    text = await block.text_content()
    assert "acme" in text and "<b>not markup</b>" in text
    assert await block.locator("b").count() == 0
    request = await site.take("charge")
    assert json.loads(request.headers["x-meta"]) == meta
    await site.answer(request, b"{}")
    await site.answer(await site.take("after"), b"{}")


async def test_the_workflow_page_draws_each_fallback_after_its_step(site, page):
    await page.goto(f"{site.manager.api_url}/ui/workflow/charged")
    fallback = page.locator('svg.dag [data-step="by-invoice"][data-kind="fallback"]')
    await fallback.wait_for()
    assert "fallback" in await fallback.locator("text.kind").text_content()
    edge = page.locator('svg.dag path.edge.fallback[data-from="charge"][data-to="by-invoice"]')
    assert await edge.count() == 1
    await page.goto(f"{site.manager.api_url}/ui/workflow/order")
    ship = page.locator('svg.dag [data-step="ship"]')
    await ship.wait_for()
    assert "when method != 'pickup'" in await ship.get_attribute("aria-label")
