"""The job page shows compensations: each undone step's node turns compensating, then
compensated (icon and word, not colour alone), and a table lists every compensation with its
status, a failed one with its error. The test plays the workers step by step."""

from __future__ import annotations

import uuid

from .test_job_page import node, open_job

WORKFLOWS = """
workflows:
  - name: order
    steps:
      - {name: reserve, queue: "{p}.reserve", compensate: {name: release, queue: "{p}.undo"}}
      - {name: charge, depends: [reserve], queue: "{p}.charge",
         compensate: {name: refund, queue: "{p}.undo"}}
      - {name: ship, depends: [charge], queue: "{p}.ship"}
"""


async def test_compensations_show_on_the_graph_and_in_their_table(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("order", {}, job_id)
    await open_job(page, site, job_id)
    assert await page.locator('[data-step="charge"][data-compensate="refund"]').count() == 1
    await site.answer(await site.take("reserve"), b'{"reservation": "<b>r1</b>"}')
    await site.answer(await site.take("charge"), b"{}")
    await site.answer(await site.take("ship"), b"", **{"x-error": "no courier"})
    refund = await site.take("undo")
    compensating = page.locator(node("charge", "compensating"))
    await compensating.wait_for()
    assert "compensating" in await compensating.locator("text.line").first.text_content()
    assert await compensating.locator("svg.icon.status-compensating").count() == 1
    await site.answer(refund, b"", **{"x-error": "refund <i>refused</i>"})
    await site.answer(await site.take("undo"), b"{}")
    compensated = page.locator(node("reserve", "compensated"))
    await compensated.wait_for()
    assert await compensated.locator("svg.icon.status-compensated").count() == 1
    assert "undone by release" in await compensated.get_attribute("aria-label")
    table = page.locator("#compensations")
    await table.locator('tr[data-compensation="release"][data-status="compensated"]').wait_for()
    failed = table.locator('tr[data-compensation="refund"][data-status="failed"]')
    assert "refund <i>refused</i>" in await failed.text_content()  # text, never markup
    assert await table.locator("i").count() == 0
    assert await page.locator('[data-action="retry"]').count() == 0  # it would be refused
    await page.wait_for_selector('[data-job-status="failed"]')


async def test_the_workflow_page_draws_each_compensation(site, page):
    await page.goto(f"{site.manager.api_url}/ui/workflow/order")
    reserve = page.locator('[data-step="reserve"][data-compensate="release"]')
    await reserve.wait_for()
    assert "↶ release" in await reserve.text_content()
    assert await page.locator('[data-step="ship"][data-compensate]').count() == 0
