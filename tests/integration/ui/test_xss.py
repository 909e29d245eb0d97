"""Users' values are text on every page: markup in a payload, an output or an error shows as
those characters and runs nothing (the CSP would stop it too; the `page` fixture fails the
test on any violation, so this proves the markup was never parsed)."""

from __future__ import annotations

import uuid

SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=1">'

WORKFLOWS = """
workflows:
  - name: echo
    steps:
      - {name: shout, queue: "{p}.shout"}
      - {name: fall, queue: "{p}.fall", depends: [shout]}
"""


async def assert_inert(page) -> None:
    """Nothing the values held ran or became an element."""
    assert await page.evaluate("typeof window.__xss") == "undefined"
    assert await page.locator("img").count() == 0
    sources = await page.eval_on_selector_all("script", "s => s.map(e => e.getAttribute('src'))")
    assert sources == ["/ui/assets/app.js"]


async def test_markup_in_payload_output_and_error_shows_as_text(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("echo", {"note": SCRIPT, "html": IMG}, job_id)
    await site.answer(await site.take("shout"), f'{{"said": "{SCRIPT}", "again": 1}}'.encode())
    await site.answer(await site.take("fall"), b"", **{"x-error": f"failed: {IMG} {SCRIPT}"})

    await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
    await page.wait_for_selector('[data-job-status="failed"]')
    payload = await page.text_content(".data-grid pre")
    assert SCRIPT in payload and IMG.replace('"', '\\"') in payload  # JSON text of the payload
    assert IMG in await page.text_content("#job-error")

    await page.click('[data-step="shout"]')
    panel = page.locator("#step-panel")
    await panel.locator("h2", has_text="shout").wait_for()
    assert SCRIPT in await panel.text_content()
    await page.click('[data-step="fall"]')
    await panel.locator("h2", has_text="fall").wait_for()
    assert f"failed: {IMG} {SCRIPT}" in await panel.locator('[data-field="error"]').text_content()
    await assert_inert(page)


async def test_markup_typed_into_the_overview_search_stays_text(site, page):
    await page.goto(f"{site.manager.api_url}/ui/")
    await page.locator("table.workflows").wait_for()
    await page.fill('[data-filter="id"]', IMG)
    alert = page.locator("#main [role=alert]")
    await alert.wait_for()
    assert await alert.text_content() == (
        f"'{IMG}' is not the start of a job id (a UUID: 0-9, a-f and -)."
    )
    await assert_inert(page)
