"""The overview (live, filters, search), a workflow's page, the dead letters with Replay, and
the layout on a narrow window, in a real browser against a real manager."""

from __future__ import annotations

import uuid

WORKFLOWS = """
workflows:
  - name: daily
    steps:
      - {name: only, queue: "{p}.only"}
  - name: shaped
    steps:
      - {name: prep, queue: "{p}.prep", retries: 2, timeout: 30}
      - {name: each, task: per_item, depends: [prep]}
      - {name: sum, queue: "{p}.sum", depends: [each]}
    tasks:
      - name: per_item
        itemListKey: items
        max_failed_items: 2
        steps:
          - {name: work, queue: "{p}.work"}
    on_error:
      - {name: alert, queue: "{p}.alert"}
  - name: narrow
    steps:
      - {name: a-step-with-a-rather-long-name, queue: "{p}.long"}
      - {name: second, queue: "{p}.second", depends: [a-step-with-a-rather-long-name]}
      - {name: third, queue: "{p}.third", depends: [second]}
      - {name: fourth, queue: "{p}.fourth", depends: [third]}
"""


async def test_the_overview_follows_new_jobs_and_filters_them(site, page):
    await page.goto(f"{site.manager.api_url}/ui/")
    daily = page.locator('table.workflows tr[data-workflow="daily"]')
    await daily.wait_for()
    await page.wait_for_selector('#connection[data-state="live"]')
    assert await page.get_attribute('[data-nav="overview"]', "aria-current") == "page"

    job_ids = [str(uuid.uuid4()) for _ in range(2)]
    for job_id in job_ids:
        await site.trigger("daily", {}, job_id)
    first = page.locator(f'tr[data-job="{job_ids[0]}"]')
    await first.get_by_text("running").wait_for()  # arrived live, no reload
    await daily.locator('[data-count="running"]', has_text="2").wait_for()

    await site.answer(await site.take("only"), b"{}")
    await site.answer(await site.take("only"), b"{}")
    await first.get_by_text("completed").wait_for()
    await daily.locator('[data-count="completed"]', has_text="2").wait_for()

    await page.select_option('[data-filter="status"]', "running")
    await page.locator("#main").get_by_text("No jobs match.").wait_for()
    await page.select_option('[data-filter="status"]', "")
    await page.fill('[data-filter="id"]', job_ids[1][:8])
    await page.wait_for_function(
        "id => document.querySelectorAll('table.jobs tr[data-job]').length === 1 &&"
        " document.querySelector('table.jobs tr[data-job]').dataset.job === id",
        arg=job_ids[1],
    )
    await page.fill('[data-filter="id"]', job_ids[1])
    await page.press('[data-filter="id"]', "Enter")
    await page.wait_for_url(f"**/ui/job/{job_ids[1]}")
    await page.wait_for_selector('[data-job-status="completed"]')


async def test_a_workflows_page_shows_its_graph_policies_hash_and_yaml(site, page):
    definition = (await site.http.get("/api/workflow/shaped/definition")).json()
    await page.goto(f"{site.manager.api_url}/ui/workflow/shaped")
    await page.locator("svg.dag").first.wait_for()
    main_graph = page.locator("section", has=page.locator("h2", has_text="Graph"))
    names = await main_graph.locator("[data-step]").evaluate_all(
        "nodes => nodes.map(n => n.dataset.step + ':' + n.dataset.kind)"
    )
    assert names == ["prep:step", "each:task", "sum:step", "alert:on_error"]
    assert await page.text_content("[data-hash]") == definition["hash"]
    task = page.locator('[data-task="per_item"]')
    assert await task.locator('svg.dag [data-step="work"]').count() == 1
    assert "2" in await task.locator("dd").nth(2).text_content()  # failed items allowed
    retries = page.locator('table.policies tr[data-step="prep"] td').nth(3)
    assert await retries.text_content() == "2"
    assert "name: shaped" in await page.text_content("pre.yaml")


async def test_dead_letters_are_listed_and_replayed_after_a_confirmation(site, page):
    correlation = str(uuid.uuid4())
    await site.trigger(None, {"lost": True}, correlation)  # no workflow header: dead-lettered
    await site.manager.process.wait_for_line(r"dead-lettered a message from")
    await page.goto(f"{site.manager.api_url}/ui/dead-letters")
    row = page.locator(f'tr[data-correlation-id="{correlation}"]')
    await row.wait_for()
    assert '{"lost": true}' in await row.text_content()
    await row.locator('[data-action="replay"]').click()
    await page.click('dialog [data-confirm="yes"]')
    await page.locator(".notice.ok", has_text="Replayed 1 message").wait_for()


async def test_on_a_narrow_window_the_page_fits_and_the_graph_scrolls(site, browser):
    job_id = str(uuid.uuid4())
    await site.trigger("narrow", {}, job_id)
    context = await browser.new_context(viewport={"width": 420, "height": 800})
    try:
        page = await context.new_page()
        await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
        await page.wait_for_selector('[data-step="fourth"][data-status="pending"]')
        sizes = await page.evaluate(
            "() => { const box = document.querySelector('.dag-scroll');"
            " return [document.documentElement.scrollWidth, innerWidth,"
            " box.scrollWidth, box.clientWidth]; }"
        )
        page_width, window_width, graph_width, graph_box = sizes
        assert page_width <= window_width  # nothing sticks out of the window
        assert graph_width > graph_box  # the wide graph scrolls inside its box
    finally:
        await context.close()
