"""A task step with 10,000 children: its node summarises them, the step panel pages them 50 at
a time, and the page never holds more than one page of child rows. The time the page takes
to show the summary is printed and written to the artifacts (not asserted: machines differ;
bench/README.md has the figure)."""

from __future__ import annotations

import time
import uuid

CHILDREN = 10_000
WORKFLOWS = """
workflows:
  - name: wide
    steps:
      - {name: spread, task: each}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: work, queue: "{p}.work"}
"""


async def test_a_ten_thousand_child_job_page_summarises_and_pages_its_children(
    site, page, artifacts
):
    job_id = str(uuid.uuid4())
    await site.trigger("wide", {"items": list(range(CHILDREN))}, job_id)
    for _ in range(3):
        await site.answer(await site.take("work", timeout_s=60), b'{"done": true}')

    started = time.perf_counter()
    await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
    spread = page.locator('svg.dag [data-step="spread"]')  # the node, not its timeline row
    await spread.locator("text.line", has_text=f"of {CHILDREN} done").wait_for()
    took_s = time.perf_counter() - started
    (artifacts / "ui-timings.txt").write_text(f"10000-child job page: {took_s:.3f} s\n")
    print(f"10000-child job page shown in {took_s:.3f} s")
    await spread.locator("text.line", has_text=f"3 of {CHILDREN} done").wait_for()

    await spread.click()
    panel = page.locator("#step-panel")
    await panel.locator(f'.child-counts[data-total="{CHILDREN}"]').wait_for()
    rows = panel.locator("table.child-table tbody tr")
    await panel.locator('[data-range="1-50"]').wait_for()
    assert await rows.count() == 50
    first = await rows.nth(0).get_attribute("data-child")
    await panel.locator('[data-page="next"]').click()
    await panel.locator('[data-range="51-100"]').wait_for()
    assert await rows.count() == 50
    assert await rows.nth(0).get_attribute("data-child") != first
    assert "of 10000" in await panel.locator(".range").text_content()

    await panel.locator('[data-filter="child-status"]').select_option("completed")
    await panel.locator('[data-range="1-3"]').wait_for()
    assert await rows.count() == 3
    links = await rows.locator("a").evaluate_all("links => links.map(a => a.pathname)")
    assert all(link.startswith("/ui/job/") for link in links) and len(links) == 3
    assert await page.locator("[data-child]").count() <= 50  # never more than one page
    assert await page.evaluate("document.getElementsByTagName('*').length") < 3000

    await rows.nth(0).locator("a").click()  # a child's own page links back to its parent
    await page.wait_for_url(f"**{links[0]}")
    await page.wait_for_selector('[data-job-status="completed"]')
    assert await page.get_attribute('[data-link="parent"]', "href") == f"/ui/job/{job_id}"
    assert await page.locator('svg.dag [data-step="work"][data-status="completed"]').count() == 1
