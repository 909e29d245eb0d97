"""The job page for the time features: a waiting step's Signal form (JSON body, confirmation)
completes it; a scheduled job shows its status and start time."""

from __future__ import annotations

import json
import uuid

WORKFLOWS = """
workflows:
  - name: approve
    steps:
      - {name: approval, wait: true, timeout: 600}
      - {name: apply, queue: "{p}.apply", depends: [approval]}
"""


def node(step: str, status: str) -> str:
    return f'[data-step="{step}"][data-status="{status}"]'


async def test_the_signal_form_asks_first_then_completes_the_waiting_step(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("approve", {}, job_id)
    await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
    await page.wait_for_selector(node("approval", "waiting"))
    await page.click(node("approval", "waiting"))
    badge = page.locator('[data-step-status="waiting"]')
    assert "waiting for a signal" in await badge.text_content()
    await page.fill('[data-field="signal-body"]', "[1, 2]")
    await page.click('[data-action="signal"]')
    assert "must be a JSON object" in await page.locator(".signal-notice").text_content()

    await page.fill('[data-field="signal-body"]', '{"approved": true, "note": "<b>ok</b>"}')
    await page.click('[data-action="signal"]')
    dialog = page.locator("dialog[open]")
    assert "Signal step approval?" in await dialog.text_content()
    await dialog.locator('[data-confirm="no"]').click()
    await dialog.wait_for(state="detached")
    steps = (await site.http.get(f"/api/job/{job_id}/steps")).json()["steps"]
    assert steps[0]["status"] == "waiting"

    await page.click('[data-action="signal"]')
    await page.click('dialog [data-confirm="yes"]')
    await page.wait_for_selector(node("approval", "completed"))
    request = await site.take("apply")
    assert json.loads(request.body) == {"approved": True, "note": "<b>ok</b>"}
    await site.answer(request, b"{}")
    await page.wait_for_selector('[data-job-status="completed"]')


async def test_a_scheduled_job_shows_its_status_and_start_time(site, page):
    job_id = str(uuid.uuid4())
    response = await site.http.post(f"/api/workflow/approve?id={job_id}&delay=600", json={})
    assert response.status_code == 200, response.text
    await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
    badge = page.locator('[data-job-status="scheduled"]')
    await badge.wait_for()
    assert "scheduled" in await badge.text_content()
    assert await page.locator('[data-field="start-at"]').count() == 1
    await page.click('[data-action="cancel"]')
    await page.click('dialog [data-confirm="yes"]')
    await page.wait_for_selector('[data-job-status="cancelled"]')
