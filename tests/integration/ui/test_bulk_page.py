"""Bulk actions on the overview's job list in a real browser: every job the filter matches
(through POST /api/jobs/bulk, counted by a dry run first and followed to its end), and rows
selected by hand (each through its own job's route), each after a confirmation with the count.
The test plays the workers: a job whose step request it has taken is running."""

from __future__ import annotations

import json
import uuid

WORKFLOWS = """
workflows:
  - name: ingest
    steps:
      - {name: load, queue: "{p}.load"}
  - name: tally
    steps:
      - {name: count, queue: "{p}.count"}
  - name: mend
    steps:
      - {name: first, queue: "{p}.first"}
"""


async def _running(site, workflow: str, queue: str, n: int) -> list[str]:
    """Start `n` jobs of `workflow` and take each one's step request: they are running."""
    ids = [str(uuid.uuid4()) for _ in range(n)]
    for job_id in ids:
        await site.trigger(workflow, {}, job_id)
    taken = {(await site.take(queue)).correlation_id.split(":")[0] for _ in ids}
    assert taken == set(ids)
    return ids


async def _status(site, job_id: str) -> str:
    return (await site.http.get(f"/api/job/{job_id}")).json()["status"]


def _bulk_posts(page) -> list[dict]:
    """The bodies of the POST /api/jobs/bulk requests the page sends."""
    sent: list[dict] = []

    def record(request) -> None:
        if request.method == "POST" and request.url.endswith("/api/jobs/bulk"):
            sent.append(json.loads(request.post_data or "null"))

    page.on("request", record)
    return sent


async def test_all_matching_cancels_every_job_of_the_filter_and_selected_rows_pause(
    site, page, artifacts
):
    ingest = await _running(site, "ingest", "load", 5)
    tally = await _running(site, "tally", "count", 2)
    sent = _bulk_posts(page)
    await page.goto(f"{site.manager.api_url}/ui/")
    await page.locator('[data-filter="workflow"] option[value="ingest"]').wait_for(state="attached")
    await page.select_option('[data-filter="workflow"]', "ingest")
    rows = page.locator("table.jobs tr[data-job]")
    await page.wait_for_function(
        "ids => { const rows = [...document.querySelectorAll('table.jobs tr[data-job]')];"
        " return rows.length === ids.length && rows.every(r => ids.includes(r.dataset.job)); }",
        arg=ingest,
    )
    bar = page.locator("[data-bulk-bar]")
    assert await bar.is_hidden()  # nothing selected yet

    await page.check('[data-bulk="select-shown"]')
    await bar.wait_for()
    assert await bar.locator("[data-bulk-count]").text_content() == "5 selected"
    assert await rows.locator("input[data-bulk-row]:checked").count() == 5
    await bar.locator('[data-bulk="all-matching"]').check()
    assert await bar.locator("[data-bulk-count]").text_content() == (
        "All jobs matching workflow=ingest"
    )
    await bar.locator('[data-bulk-action="cancel"]').click()
    dialog = page.locator("dialog.confirm[open]")
    await dialog.wait_for()
    assert await dialog.locator("h2").text_content() == "Cancel 5 jobs matching workflow=ingest?"
    assert await dialog.locator('[data-confirm="yes"]').text_content() == "Cancel 5 jobs"
    assert sent == [{"action": "cancel", "filter": {"workflow": "ingest"}, "dry_run": True}]
    await page.screenshot(path=str(artifacts / "bulk-confirm.png"))
    await dialog.locator('[data-confirm="yes"]').click()

    progress = page.locator('[data-bulk-status][data-state="finished"]')
    await progress.wait_for()
    assert await progress.get_attribute("data-changed") == "5"
    assert await progress.get_attribute("data-refused") == "0"
    line = await progress.locator("[data-bulk-line]").text_content()
    assert line == "Cancelled 5 of 5 jobs."
    await page.screenshot(path=str(artifacts / "bulk-finished.png"))
    assert sent[1:] == [{"action": "cancel", "filter": {"workflow": "ingest"}}]
    assert [await _status(site, job_id) for job_id in ingest] == ["cancelled"] * 5
    assert [await _status(site, job_id) for job_id in tally] == ["running"] * 2
    # The list was read again: every row cancelled, nothing selected, the bar gone.
    await page.wait_for_function(
        "() => [...document.querySelectorAll('table.jobs tr[data-job] .badge')]"
        ".every(b => b.textContent.includes('cancelled'))"
    )
    await bar.wait_for(state="hidden")

    # Two rows selected by hand: each paused through its own route, after a confirmation.
    await page.select_option('[data-filter="workflow"]', "tally")
    for job_id in tally:
        await page.check(f'input[data-bulk-row="{job_id}"]')
    assert await bar.locator("[data-bulk-count]").text_content() == "2 selected"
    await bar.locator('[data-bulk-action="pause"]').click()
    await dialog.wait_for()
    assert await dialog.locator("h2").text_content() == "Pause the 2 jobs selected?"
    assert await dialog.locator('[data-confirm="yes"]').text_content() == "Pause 2 jobs"
    await dialog.locator('[data-confirm="yes"]').click()
    await progress.wait_for()
    assert await progress.get_attribute("data-changed") == "2"
    assert [await _status(site, job_id) for job_id in tally] == ["paused"] * 2
    assert len(sent) == 2  # no bulk request for selected rows
    for job_id in tally:
        row = page.locator(f'tr[data-job="{job_id}"]')
        await row.locator(".badge", has_text="paused").wait_for()


async def test_a_fork_of_selected_rows_asks_for_the_step_and_shows_the_refusals(site, page):
    ended = [str(uuid.uuid4()) for _ in range(2)]
    for job_id in ended:
        await site.trigger("mend", {}, job_id)
    for _ in ended:
        await site.answer(await site.take("first"), b"", **{"x-error": "broken"})
    running = await _running(site, "mend", "first", 1)
    await page.goto(f"{site.manager.api_url}/ui/workflow/mend")
    for job_id in [*ended, *running]:
        await page.locator(f'tr[data-job="{job_id}"] .badge').wait_for()
    for job_id in ended:
        await page.locator(f'tr[data-job="{job_id}"] .badge', has_text="failed").wait_for()
        await page.check(f'input[data-bulk-row="{job_id}"]')
    await page.check(f'input[data-bulk-row="{running[0]}"]')
    await page.locator('[data-bulk-action="fork"]').click()
    dialog = page.locator('dialog[data-dialog="bulk-fork"][open]')
    await dialog.wait_for()
    assert await dialog.locator("h2").text_content() == "Fork the 3 jobs selected?"
    await dialog.locator('[data-confirm="yes"]').click()  # no step named
    await dialog.locator('[data-error="bulk-fork-from"]', has_text="Name the step").wait_for()
    await dialog.get_by_label("Run again from step").fill("first")
    await dialog.get_by_label("Input (a JSON object, optional)").fill("[1]")
    await dialog.locator('[data-confirm="yes"]').click()
    await dialog.locator('[data-error="bulk-fork-input"]', has_text="not an array").wait_for()
    await dialog.get_by_label("Input (a JSON object, optional)").fill('{"n": 1}')
    await dialog.locator('[data-confirm="yes"]').click()

    progress = page.locator('[data-bulk-status][data-state="finished"]')
    await progress.wait_for()
    assert await progress.get_attribute("data-changed") == "2"
    assert await progress.get_attribute("data-refused") == "1"
    line = await progress.locator("[data-bulk-line]").text_content()
    assert line == "Forked 2 of 3 jobs; 1 not changed:"
    refusal = progress.locator(f'[data-bulk-errors] li[data-job="{running[0]}"]')
    assert (await refusal.text_content()).startswith(f"{running[0]}: ")
    for job_id in ended:
        forks = (await site.http.get(f"/api/job/{job_id}")).json().get("forks") or []
        assert len(forks) == 1 and forks[0]["step"] == "first"
    for _ in ended:  # each fork runs the step again, with the new input
        assert json.loads((await site.take("first")).body) == {"n": 1}
