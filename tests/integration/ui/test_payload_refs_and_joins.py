"""The job page in a real browser shows a payload reference by its size with a download link that
downloads the stored value, and a join step's progress: how many children it needs, how many
succeeded, and that it was met with the rest cancelled. A real manager with a file payload
store; the test plays the worker."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from payload_refs import FileStore

STORE_DIR = Path(tempfile.mkdtemp(prefix="wm-ui-payloads-"))
MANAGER_ENV = {"WM_PAYLOAD_STORE": f"main=file://{STORE_DIR}"}

WORKFLOWS = """
workflows:
  - name: gather
    steps:
      - name: ask
        task: per_item
        join: {min_success: 2}
    tasks:
      - name: per_item
        itemListKey: items
        steps:
          - {name: work, queue: "{p}.work"}
"""


@pytest.fixture(scope="module", autouse=True)
def _store_dir() -> Iterator[Path]:
    yield STORE_DIR
    shutil.rmtree(STORE_DIR, ignore_errors=True)


async def test_a_reference_shows_its_size_and_downloads_and_a_join_its_progress(
    site, page, artifacts
):
    job_id = str(uuid.uuid4())
    value = json.dumps({"text": "x" * 3_000_000}).encode()
    ref = await FileStore("main", STORE_DIR).put(job_id, value)
    await site.trigger("gather", {"items": [1, 2, 3], "report": ref.to_json()}, job_id)
    await page.goto(f"{site.manager.api_url}/ui/job/{job_id}")
    await page.locator("[data-job-status]").wait_for()

    # The payload: the reference as its size and digest, never its three megabytes.
    shown = page.locator(".payload-ref")
    await shown.wait_for()
    label = await shown.text_content()
    assert label == f"stored value · 3.0 MB · sha256 {ref.sha256[:8]}… · download"
    assert await shown.get_attribute("data-ref") == ref.uri
    async with page.expect_download() as started:
        await shown.locator('a[data-link="payload-download"]').click()
    download = await started.value
    assert download.suggested_filename == f"{ref.sha256}.json"
    saved = await download.path()
    assert saved is not None and Path(saved).read_bytes() == value

    # The join step: needs 2 of 3; one child succeeds, then a second, and the join is met.
    requests = [await site.take("work") for _ in range(3)]
    await site.answer(requests[0], b'{"item": "a"}')
    await page.locator('svg.dag [data-step="ask"]').click()
    join = page.locator('[data-field="join"]')
    await page.wait_for_selector('[data-field="join"][data-succeeded="1"]')
    assert await join.text_content() == "min_success 2: needs 2 · 1 succeeded · 0 failed · 2 left"
    await site.answer(requests[1], b'{"item": "b"}')
    await page.wait_for_selector('[data-job-status="completed"]')
    await page.wait_for_selector('[data-field="join"][data-succeeded="2"]')
    assert await join.text_content() == (
        "min_success 2: needs 2 · 2 succeeded · 0 failed · 1 left · met: the rest cancelled"
    )
    # The graph's node says it too: successes of those needed.
    assert "2 of 2 needed" in await page.locator('svg.dag [data-step="ask"]').text_content()
    await page.screenshot(path=str(artifacts / "payload-refs-and-join.png"), full_page=True)
    # The third child was cancelled when the join was met: its late answer changes nothing.
    await site.answer(requests[2], b'{"item": "c"}')
    body = await site.until(
        f"/api/job/{job_id}/steps",
        lambda b: b["steps"][0]["children"]["cancelled"] == 1,
    )
    assert body["steps"][0]["join"]["met"] is True
