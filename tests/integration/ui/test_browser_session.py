"""The browser session in Chromium: a page of another origin cannot change anything, a
rebound DNS name is refused, logout ends the session, and the API docs load nothing from
outside."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx

from workflow_manager.api.ui import CSP

from .conftest import CHROMIUM, CHROMIUM_ARGS

TOKEN = "tok-" + uuid.uuid4().hex
MANAGER_ENV = {"WM_API_TOKEN": TOKEN}
BEARER = {"Authorization": f"Bearer {TOKEN}"}
WORKFLOWS = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""
# A page elsewhere that tries what a browser lets any page do: a no-cors fetch with a
# text/plain body, then a form posting JSON-looking text/plain (`{"x":"="}`).
ATTACK = """<!doctype html>
<title>attack</title>
<form id="f" method="post" action="{base}/api/workflow/manual" enctype="text/plain">
  <input name='{{"x":"' value='"}}'>
</form>
<script>
fetch("{base}/api/workflow/manual", {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"Content-Type": "text/plain"}}, body: "{{}}"}})
  .catch(() => null)
  .finally(() => {{ document.title = "fetched"; document.getElementById("f").submit(); }});
</script>
"""


@contextlib.contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """A plain HTTP server for `folder` on a free port of 127.0.0.1: another origin."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def log_in(page, base: str, next_page: str = "/ui/") -> None:
    await page.goto(f"{base}/ui/login?next={next_page}")
    await page.fill("#token", TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}{next_page}")


async def test_a_page_on_another_port_cannot_start_a_job_with_the_session(site, page, tmp_path):
    base = site.manager.api_url
    await log_in(page, base)  # the session cookie goes to every port of 127.0.0.1
    (tmp_path / "attack.html").write_text(ATTACK.format(base=base))
    with serve_folder(tmp_path) as elsewhere:
        await page.goto(f"{elsewhere}/attack.html")
        await page.wait_for_url(f"{base}/api/workflow/manual")  # the form was sent
    assert "another site cannot change anything here" in await page.text_content("body")
    jobs = await site.http.get("/api/workflow/manual", headers=BEARER)
    assert jobs.json()["running"] == []


async def test_logout_ends_the_session(site, page):
    base = site.manager.api_url
    await log_in(page, base)
    [cookie] = await page.context.cookies()
    assert cookie["name"] == "wm_session" and cookie["value"] != TOKEN
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["expires"] > 0
    logout = page.locator("#logout")
    await logout.click()
    await page.wait_for_url(f"{base}/ui/login")
    assert await page.context.cookies() == []
    await page.goto(f"{base}/ui/")
    assert page.url.startswith(f"{base}/ui/login?next=")
    async with httpx.AsyncClient(base_url=base) as copied:  # the old cookie, kept elsewhere
        answer = await copied.get("/api/jobs", headers={"Cookie": f"wm_session={cookie['value']}"})
        assert answer.status_code == 401


async def test_the_api_docs_load_nothing_from_outside(site, page):
    base = site.manager.api_url
    await log_in(page, base)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    response = await page.goto(f"{base}/docs")
    assert response.headers["content-security-policy"] == CSP
    await page.locator(".swagger-ui .info .title", has_text="workflow-manager").wait_for()
    await page.locator(".opblock-summary-path", has_text="/api/workflow/{name}").first.wait_for()
    assert (await page.goto(f"{base}/redoc")).status == 404  # no Redoc: it needs inline styles
    assert requested and all(url.startswith(base + "/") for url in requested), requested


async def test_a_rebound_dns_name_gets_nothing(site, browser):  # browser: skips without one
    from playwright.async_api import async_playwright

    port = site.manager.api_url.rsplit(":", 1)[1]
    # The attacker's name resolves to 127.0.0.1: what a DNS rebinding does after the page loads.
    args = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP rebound.attacker.test 127.0.0.1"]
    async with async_playwright() as playwright:
        rebinding = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            tab = await rebinding.new_page()
            answer = await tab.goto(f"http://rebound.attacker.test:{port}/ui/login")
            assert answer is not None and answer.status == 400
            assert "does not answer to the host" in await tab.text_content("body")
        finally:
            await rebinding.close()
