"""Forking a job from its page in a real browser: the Fork dialog picks the failed step, checks
the input it is given before sending anything, and lands on the new job's page, which says what
it was forked from and marks the steps it kept; the source's page lists its forks. The test
plays the workers step by step."""

from __future__ import annotations

import json
import uuid

WORKFLOWS = """
workflows:
  - name: mend
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: second, queue: "{p}.second", depends: [first]}
  - name: spread
    steps:
      - {name: prepare, queue: "{p}.prepare"}
      - {name: fan, task: each, depends: [prepare]}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: square, queue: "{p}.square"}
"""


def _fork_posts(page) -> list[str]:
    """The bodies of the fork requests the page sends, as it sends them."""
    sent: list[str] = []

    def record(request) -> None:
        if request.method == "POST" and request.url.endswith("/fork"):
            sent.append(request.post_data or "")

    page.on("request", record)
    return sent


async def test_a_fork_from_the_failed_step_runs_it_with_a_new_input_and_links_both(
    site, page, artifacts
):
    source = str(uuid.uuid4())
    await site.trigger("mend", {"n": 1}, source)
    await site.answer(await site.take("first"), b'{"n": 2}')
    await site.answer(await site.take("second"), b"", **{"x-error": "bad input"})
    sent = _fork_posts(page)
    await page.goto(f"{site.manager.api_url}/ui/job/{source}")
    await page.wait_for_selector('[data-job-status="failed"]')  # the page follows it live
    await page.click('[data-action="fork"]')
    dialog = page.locator('dialog[data-dialog="fork"][open]')
    await dialog.wait_for()
    assert await page.evaluate("document.activeElement.id") == "fork-from"
    steps = dialog.get_by_label("Run again from step")
    assert await steps.input_value() == "second"  # the failed step, first
    assert await dialog.locator('[data-field-box="fork-children"]').is_hidden()  # no task step
    await steps.select_option("second")
    text = dialog.get_by_label("Input (a JSON object, optional)")
    error = dialog.locator('[data-error="fork-input"]')

    await text.fill('{"n": 20')
    await dialog.locator('[data-confirm="yes"]').click()
    await error.wait_for()
    assert "not valid JSON" in await error.text_content()
    assert await text.get_attribute("aria-invalid") == "true"
    await text.fill("[20]")
    await dialog.locator('[data-confirm="yes"]').click()
    await dialog.locator('[data-error="fork-input"]', has_text="not an array").wait_for()
    assert sent == []  # neither was sent
    await page.screenshot(path=str(artifacts / "fork-dialog.png"))
    assert (await site.http.get(f"/api/job/{source}")).json().get("forks") is None

    await text.fill('{"n": 20}')
    await dialog.locator('[data-confirm="yes"]').click()
    await page.wait_for_url(lambda url: "/ui/job/" in url and source not in url)
    fork = page.url.rsplit("/", 1)[1]
    assert [json.loads(body) for body in sent] == [
        {"from": "second", "input": {"n": 20}, "definition": "current"}
    ]
    line = page.locator('[data-field="forked-from"]')
    await line.wait_for()
    assert (await line.text_content()).startswith("Forked from ")
    assert "at step second" in await line.text_content()
    assert "kept 1 step" in await line.text_content()
    assert await line.locator("a").get_attribute("href") == f"/ui/job/{source}"
    kept = page.locator('svg.dag [data-step="first"] .kept-badge')
    await kept.wait_for()
    assert source in await kept.locator("title").text_content()
    assert await page.locator('svg.dag [data-step="second"] .kept-badge').count() == 0

    request = await site.take("second")  # the worker gets the forked step, with the new input
    assert request.correlation_id == f"{fork}:second"
    assert json.loads(request.body) == {"n": 20}
    await site.answer(request, b'{"n": 21}')
    await page.wait_for_selector('[data-job-status="completed"]')
    first = await site.channel.declare_queue(f"{site.prefix}.first", durable=True)
    assert await first.get(fail=False) is None  # kept, not run again
    await page.click('svg.dag [data-step="first"]')
    panel = page.locator("#step-panel")
    await panel.locator(".kept-badge").wait_for()
    shot = artifacts / "fork-page.png"
    await page.screenshot(path=str(shot), full_page=True)
    print(f"fork page screenshot: {shot}")
    assert await panel.locator(".kept-badge").get_attribute("title") == (
        f"output kept from job {source}"
    )
    assert await panel.locator('[data-link="kept-from"]').get_attribute("href") == (
        f"/ui/job/{source}"
    )

    await line.locator("a").click()  # back to the source: it lists its fork
    await page.wait_for_url(lambda url: url.endswith(f"/ui/job/{source}"))
    listed = page.locator(f'[data-field="forks"] [data-fork="{fork}"]')
    await listed.wait_for()
    assert "at step second" in await listed.text_content()
    await page.screenshot(path=str(artifacts / "forked-source.png"))
    assert await listed.locator("a").get_attribute("href") == f"/ui/job/{fork}"


async def test_the_fork_dialog_asks_about_children_shows_a_refusal_and_escapes(site, page):
    source = str(uuid.uuid4())
    await site.trigger("spread", {}, source)
    await site.answer(await site.take("prepare"), b'{"items": [3]}')
    await site.answer(await site.take("square"), b'{"item": 9}')
    await page.goto(f"{site.manager.api_url}/ui/job/{source}")
    await page.wait_for_selector('[data-job-status="completed"]')
    await page.click('[data-action="fork"]')
    dialog = page.locator('dialog[data-dialog="fork"][open]')
    await dialog.wait_for()
    steps = dialog.get_by_label("Run again from step")
    assert await steps.input_value() == "prepare"  # none failed: the first step
    children = dialog.locator('[data-field-box="fork-children"]')
    assert await children.is_hidden()
    await steps.select_option("fan")
    await children.wait_for()  # a task step: which children run again
    await dialog.get_by_label("Children of the task step").select_option("all")
    await dialog.get_by_label("Definition").select_option("pinned")

    refusal = "<b>no</b> fork: the manager says why"

    async def refuse(route) -> None:
        body = json.dumps({"error": refusal})
        await route.fulfill(status=409, content_type="application/json", body=body)

    await page.route("**/fork", refuse)
    sent = _fork_posts(page)
    await dialog.locator('[data-confirm="yes"]').click()
    said = dialog.locator('.dialog-error [role="alert"]')
    await said.wait_for()
    assert await said.text_content() == f"Could not fork the job: {refusal}"  # as text
    assert await dialog.locator(".dialog-error b").count() == 0
    assert [json.loads(body) for body in sent] == [
        {"from": "fan", "definition": "pinned", "children": "all"}
    ]

    await page.keyboard.press("Escape")
    await page.locator('dialog[data-dialog="fork"]').wait_for(state="detached")
    assert page.url.endswith(f"/ui/job/{source}")
    assert (await site.http.get(f"/api/job/{source}")).json().get("forks") is None
