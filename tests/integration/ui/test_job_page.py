"""The job page in a real browser: the DAG follows the run live, failures show their error and
attempts, and Cancel and Retry work from the page. The test plays the workers step by step."""

from __future__ import annotations

import json
import uuid

WORKFLOWS = """
workflows:
  - name: chain
    steps:
      - {name: fetch, queue: "{p}.fetch"}
      - {name: left, queue: "{p}.left", depends: [fetch]}
      - {name: right, queue: "{p}.right", depends: [fetch]}
      - {name: join, queue: "{p}.join", depends: [left, right]}
  - name: doomed
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: boom, depends: [first], queue: "{p}.boom", retries: 1,
         retry_backoff: {initial: 0.3, multiplier: 1, max: 0.3}}
    on_error:
      - {name: alert, queue: "{p}.alert"}
  - name: one-by-one
    concurrency: {limit: 1}
    steps:
      - {name: turn, queue: "{p}.turn"}
  - name: pausable
    steps:
      - {name: before, queue: "{p}.before"}
      - {name: after, queue: "{p}.after", depends: [before]}
  - name: hold
    steps:
      - {name: hand, queue: "{p}.hand"}
    on_cancel:
      - {name: tidy, queue: "{p}.tidy"}
"""


def node(step: str, status: str) -> str:
    return f'[data-step="{step}"][data-status="{status}"]'


async def open_job(page, site, job_id: str) -> None:
    """Open the job page and mark the document, to prove later that it was never reloaded."""
    await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
    await page.locator("[data-job-status]").wait_for()
    await page.evaluate("window.__sameDocument = true")


async def test_the_dag_changes_as_the_worker_replies(site, page, artifacts):
    job_id = str(uuid.uuid4())
    await site.trigger("chain", {"book": "Middlemarch"}, job_id)
    await open_job(page, site, job_id)
    await page.wait_for_selector(node("fetch", "running"))
    assert await page.locator("svg.dag [data-step]").count() == 4
    edges = await page.eval_on_selector_all(
        "svg.dag path.edge", "paths => paths.map(p => p.dataset.from + '>' + p.dataset.to)"
    )
    assert sorted(edges) == ["fetch>left", "fetch>right", "left>join", "right>join"]
    assert await page.get_attribute("[data-job-status]", "data-job-status") == "running"
    assert await page.locator(node("join", "pending")).count() == 1

    await site.answer(await site.take("fetch"), b'{"chapters": 3}')
    await page.wait_for_selector(node("fetch", "completed"))
    await page.wait_for_selector(node("left", "running"))
    await page.wait_for_selector(node("right", "running"))

    await site.answer(await site.take("left"), b'{"left": 1}')
    await page.wait_for_selector(node("left", "completed"))
    assert await page.locator(node("right", "running")).count() == 1

    await site.answer(await site.take("right"), b'{"right": 2}')
    await site.answer(await site.take("join"), b'{"words": 316159}')
    await page.wait_for_selector('[data-job-status="completed"]')
    await page.wait_for_selector(node("join", "completed"))
    assert json.loads(await page.text_content("#job-result pre")) == {"words": 316159}
    assert await page.locator("svg.timeline rect.bar").count() == 4
    assert await page.evaluate("window.__sameDocument") is True  # updated live, never reloaded
    trace_id = (await site.http.get(f"/api/job/{job_id}")).json()["trace_id"]
    assert await page.text_content('[data-field="trace-id"]') == trace_id
    shot = artifacts / "job-page.png"
    await page.screenshot(path=str(shot), full_page=True)
    print(f"job page screenshot: {shot}")


async def test_a_failed_step_shows_its_error_and_attempts_and_retry_runs_it_again(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("doomed", {}, job_id)
    await site.answer(await site.take("first"), b'{"ok": true}')
    for attempt in (1, 2):
        await site.answer(await site.take("boom"), b"", **{"x-error": f"broken {attempt}"})
    await site.answer(await site.take("alert"), b'{"paged": "ops"}')

    await open_job(page, site, job_id)
    await page.wait_for_selector('[data-job-status="failed"]')
    await page.wait_for_selector(node("boom", "failed"))
    await page.wait_for_selector(node("alert", "completed"))
    assert await page.get_attribute('[data-step="alert"]', "data-kind") == "on_error"
    assert "broken 2" in await page.text_content("#job-error")

    await page.click('[data-step="boom"]')
    panel = page.locator("#step-panel")
    await panel.locator("h2", has_text="boom").wait_for()
    rows = panel.locator("table.attempts tbody tr")
    assert await rows.count() == 2
    assert "broken 1" in await rows.nth(0).text_content()
    assert "broken 2" in await rows.nth(1).text_content()
    assert "broken 2" in await panel.locator('[data-field="error"]').text_content()
    boom_row = page.locator('svg.timeline g.row[data-step="boom"]')
    assert await boom_row.locator("rect.bar").count() == 2
    assert await boom_row.locator("line.wait").count() == 1  # the retry wait, as a gap

    assert await page.locator('[data-action="cancel"]').count() == 0
    await page.click('[data-action="retry"]')
    await page.click('dialog [data-confirm="yes"]')
    await page.wait_for_selector('[data-job-status="running"]')
    assert (await site.http.get(f"/api/job/{job_id}")).json()["status"] == "running"
    retried = await site.take("boom")
    assert retried.headers["x-attempt"] == 3
    await site.answer(retried, b'{"fixed": true}')
    await page.wait_for_selector('[data-job-status="completed"]')
    await page.wait_for_selector(node("boom", "completed"))


async def test_cancel_from_the_page_asks_first_then_cancels_the_job(site, page):
    job_id = str(uuid.uuid4())
    await site.trigger("hold", {}, job_id)
    await site.take("hand")  # taken, never answered: the step stays running
    await open_job(page, site, job_id)
    await page.wait_for_selector(node("hand", "running"))

    await page.click('[data-action="cancel"]')
    dialog = page.locator("dialog[open]")
    assert "Cancel this job?" in await dialog.text_content()
    await dialog.locator('[data-confirm="no"]').click()
    await dialog.wait_for(state="detached")
    assert (await site.http.get(f"/api/job/{job_id}")).json()["status"] == "running"

    await page.click('[data-action="cancel"]')
    await page.click('dialog [data-confirm="yes"]')
    await page.wait_for_selector('[data-job-status="cancelled"]')
    assert (await site.http.get(f"/api/job/{job_id}")).json()["status"] == "cancelled"
    await site.answer(await site.take("tidy"), b"{}")  # on_cancel ran
    await page.wait_for_selector(node("tidy", "completed"))
    assert await page.get_attribute('[data-step="tidy"]', "data-kind") == "on_cancel"
    assert await page.locator('[data-action="cancel"]').count() == 0


async def test_the_job_page_shows_the_jobs_priority(site, page):
    response = await site.http.post("/api/workflow/hold?priority=6", json={})
    assert response.status_code == 200, response.text
    await open_job(page, site, response.json()["id"])
    assert await page.text_content('[data-field="priority"]') == "6"


async def test_a_queued_job_shows_its_status_and_since_when_and_starts_live(site, page):
    first = (await site.http.post("/api/workflow/one-by-one", json={})).json()["id"]
    waiting = (await site.http.post("/api/workflow/one-by-one", json={})).json()["id"]
    await open_job(page, site, waiting)
    badge = page.locator("#job-status")
    assert await badge.get_attribute("data-job-status") == "queued"
    assert (await badge.text_content()).strip() == "queued"
    assert await page.locator("#job-status svg.icon.status-queued").count() == 1
    assert await page.text_content('[data-field="queued-at"]')
    waits_for = await page.text_content('[data-field="waiting-for"]')
    assert waits_for == "the workflow's concurrency: 1 of 1 running"
    request = await site.take("turn")
    assert request.correlation_id.startswith(first)
    await site.answer(request, b"{}")
    await page.wait_for_selector('[data-job-status="running"]')


async def test_the_page_follows_again_after_its_stream_is_refused(site, page):
    """A 503 (with several managers: the job's manager moving) makes EventSource give up for
    good: the page opens a new stream after a second and follows the job live again."""
    refused: list[str] = []

    async def refuse_once(route) -> None:
        if refused:
            await route.continue_()
            return
        refused.append(route.request.url)
        body = json.dumps({"error": "job is in partition 3, which another manager runs, and ..."})
        await route.fulfill(
            status=503, content_type="application/json", body=body, headers={"Retry-After": "1"}
        )

    await page.route("**/api/events?*", refuse_once)
    job_id = str(uuid.uuid4())
    await site.trigger("chain", {"book": "Persuasion"}, job_id)
    await open_job(page, site, job_id)
    await page.wait_for_selector(node("fetch", "running"))
    await page.wait_for_selector('#connection[data-state="live"]')
    assert refused == [f"{site.manager.api_url}/api/events?job={job_id}"]

    await site.answer(await site.take("fetch"), b'{"chapters": 3}')
    await page.wait_for_selector(node("left", "running"))  # an event made the page re-read
    assert await page.evaluate("window.__sameDocument") is True


async def test_pause_and_resume_from_the_page(site, page):
    # Its own queues: other tests of this module leave requests in the chain's.
    job_id = str(uuid.uuid4())
    await site.trigger("pausable", {}, job_id)
    before = await site.take("before")
    await open_job(page, site, job_id)
    await page.click('[data-action="pause"]')
    await page.wait_for_selector('[data-job-status="paused"]')
    assert await page.locator('[data-action="pause"]').count() == 0
    await site.answer(before, b"{}")  # in flight when paused: kept; `after` is held
    await page.wait_for_selector(node("before", "completed"))
    await page.click('[data-action="resume"]')
    await page.wait_for_selector('[data-job-status="running"]')
    after = await site.take("after")  # what the pause held went out on resume
    assert after.correlation_id == f"{job_id}:after"
