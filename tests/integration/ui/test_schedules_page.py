"""A workflow's page lists its schedules; Pause and Resume work from it after a confirmation."""

from __future__ import annotations

WORKFLOWS = """
workflows:
  - name: hourly
    schedules:
      - {name: top, every: 3600, catch_up: false}
      - {name: nightly, cron: "0 2 * * *", timezone: Europe/Paris, catch_up: false}
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def test_the_schedules_show_on_the_workflow_page_and_pause_and_resume(site, page):
    await page.goto(f"{site.manager.api_url}/ui/workflow/hourly")
    row = page.locator('[data-schedule="nightly"]')
    await row.wait_for()
    assert "cron 0 2 * * * (Europe/Paris)" in await row.text_content()
    assert (await row.locator('[data-field="schedule-state"]').text_content()).startswith("next ")
    await row.locator('[data-action="pause"]').click()
    await page.click('dialog [data-confirm="yes"]')
    await page.wait_for_selector('[data-schedule="nightly"] .status-paused')
    listed = (await site.http.get("/api/schedules")).json()["schedules"]
    assert {s["name"]: s["paused"] for s in listed} == {"top": False, "nightly": True}
    await page.locator('[data-schedule="nightly"] [data-action="resume"]').click()
    await page.click('dialog [data-confirm="yes"]')
    await page.wait_for_selector('[data-schedule="nightly"] [data-action="pause"]')
    listed = (await site.http.get("/api/schedules")).json()["schedules"]
    assert not any(s["paused"] for s in listed)
