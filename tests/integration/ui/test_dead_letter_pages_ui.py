"""The dead-letter page in a real browser: a row's Replay replays that letter only, a large body
shows as a preview saying so, and the listing pages."""

from __future__ import annotations

import json

import aio_pika

WORKFLOWS = """
workflows:
  - name: daily
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def _letter(site, target: str, body: bytes, correlation_id: str, reason: str) -> None:
    headers = {"x-dead-reason": reason, "x-dead-from": target}
    message = aio_pika.Message(body, headers=headers, correlation_id=correlation_id)
    await site.channel.default_exchange.publish(message, f"{site.manager.queue}.dead")


async def test_a_rows_replay_replays_that_letter_and_not_others_sharing_its_correlation_id(
    site, page
):
    target = f"{site.prefix}.target"
    queue = await site.channel.declare_queue(target, durable=True)
    try:
        shared = "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10:only"
        big = json.dumps({"which": "second", "pad": "x" * 2_000_000}).encode()
        await _letter(site, target, b'{"which": "first"}', shared, "first reason")
        await _letter(site, target, big, shared, "second reason")
        await page.goto(f"{site.manager.api_url}/ui/dead-letters")
        rows = page.locator(f'tr[data-correlation-id="{shared}"]')
        await rows.nth(1).wait_for()
        assert await rows.count() == 2
        second = rows.filter(has_text="second reason")
        # 2 MB shown as its first 4 KiB, and the page says so.
        note = await second.locator("[data-truncated]").text_content()
        assert "first 4096 bytes of 1.9 MiB" in note and "a replay sends all" in note
        kept_id = await rows.filter(has_text="first reason").get_attribute("data-letter-id")

        await second.locator('[data-action="replay"]').click()
        await page.click('dialog [data-confirm="yes"]')
        await page.locator(".notice.ok", has_text="Replayed 1 message.").wait_for()
        await page.locator(f'tr[data-correlation-id="{shared}"]').nth(1).wait_for(state="detached")
        assert await rows.count() == 1
        assert await rows.first.get_attribute("data-letter-id") == kept_id
        arrived = await queue.get(timeout=10)
        assert arrived.body == big  # whole
        await arrived.ack()
        assert await queue.get(fail=False) is None  # the other one stayed
    finally:
        await site.channel.queue_delete(target)
        await (await site.channel.get_queue(f"{site.manager.queue}.dead")).purge()


async def test_the_listing_pages_through_more_letters_than_one_page(site, page):
    target = f"{site.prefix}.target"
    await site.channel.declare_queue(target, durable=True)
    try:
        for index in range(105):
            await _letter(site, target, b"{}", f"c-{index}", f"reason {index}")
        await page.goto(f"{site.manager.api_url}/ui/dead-letters")
        await page.locator('tr[data-correlation-id="c-99"]').wait_for()
        assert "Dead letters 1–100 of 105" in await page.text_content("main")
        assert await page.is_disabled('[data-action="previous-page"]')
        await page.click('[data-action="next-page"]')
        await page.locator('tr[data-correlation-id="c-104"]').wait_for()
        assert await page.locator("table.letters tbody tr").count() == 5
        assert "Dead letters 101–105 of 105" in await page.text_content("main")
        assert await page.is_disabled('[data-action="next-page"]')
        await page.click('[data-action="previous-page"]')
        await page.locator('tr[data-correlation-id="c-0"]').wait_for()
    finally:
        await site.channel.queue_delete(target)
        await (await site.channel.get_queue(f"{site.manager.queue}.dead")).purge()
