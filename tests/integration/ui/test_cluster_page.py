"""The cluster page: a manager with --partitions on PostgreSQL, its partitions and their leases
(each lease's state with its label and icon), and a standby holding none (its API address is
shown as text)."""

from __future__ import annotations

import uuid

import aio_pika
import psycopg

from tests.pgdatabase import fresh_database

from ..harness import start_manager

WORKFLOWS = """
workflows:
  - name: only
    steps:
      - {name: one, queue: "{p}.one"}
"""


async def test_the_cluster_page_shows_the_managers_partitions_and_leases(amqp_url, tmp_path, page):
    prefix = "t" + uuid.uuid4().hex[:12]
    config = tmp_path / "workflows.yaml"
    config.write_text(WORKFLOWS.replace("{p}", prefix))
    with fresh_database() as db:
        manager = await start_manager(
            config, f"{prefix}.wm", amqp_url, db, extra_args=["--partitions", "4"]
        )
        try:
            await page.goto(f"{manager.api_url}/ui/cluster")
            row = page.locator("tr[data-manager]")
            await row.wait_for()
            assert (await row.locator('[data-field="partitions"]').text_content()) == "0, 1, 2, 3"
            assert "(this one)" in await row.text_content()
            states = page.locator('[data-field="lease-state"]')
            assert await states.count() == 4
            assert set(await states.all_text_contents()) == {"held"}
            assert await page.locator("[data-partition] .badge.status-held svg").count() == 4
            assert await page.get_attribute('a[data-nav="cluster"]', "aria-current") == "page"
            assert (await row.locator('[data-field="api-url"]').text_content()) == manager.api_url

            # Another manager, alive and holding nothing (a row as its heartbeat writes it).
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO cluster_members (name, api_url, joined_at, renewed_at, expires_at)"
                    " VALUES ('other:1', '<b>http://other:8080</b>', 0, 0, 1e12)"
                )
            await page.click('[data-action="reload"]')
            standby = page.locator('tr[data-manager="other:1"]')
            await standby.wait_for()
            assert (await standby.locator('[data-field="partitions"]').text_content()) == "standby"
            url = standby.locator('[data-field="api-url"]')
            assert await url.text_content() == "<b>http://other:8080</b>"
            assert await url.locator("b").count() == 0
        finally:
            code = await manager.process.stop()
            await _delete_queues(amqp_url, prefix)
        assert code == 0, manager.process.output


async def _delete_queues(amqp_url: str, prefix: str) -> None:
    queue = f"{prefix}.wm"
    names = [queue, *(f"{queue}.{s}" for s in ("jobs", "signals", "dead")), f"{prefix}.one"]
    names += [f"{queue}.p{k}" for k in range(4)]
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        for name in names:
            await channel.queue_delete(name)
