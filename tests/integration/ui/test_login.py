"""With an API token, the UI's pages ask for it once (login page, HttpOnly cookie); the API
keeps answering 401 to anyone without it."""

from __future__ import annotations

import uuid

import httpx

from workflow_manager.api.ui import CSP

TOKEN = "tok-" + uuid.uuid4().hex
MANAGER_ENV = {"WM_API_TOKEN": TOKEN}
WORKFLOWS = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""


async def test_pages_need_the_token_and_the_login_brings_the_page_back(site, page):
    base = site.manager.api_url
    job = str(uuid.uuid4())
    response = await page.goto(f"{base}/ui/job/{job}")
    assert page.url == f"{base}/ui/login?next=%2Fui%2Fjob%2F{job}"
    assert response.headers["content-security-policy"] == CSP
    assert "unsafe-inline" not in response.headers["content-security-policy"]

    await page.fill("#token", "not-the-token")
    await page.click("button[type=submit]")
    error = page.locator("#login-error")
    await error.wait_for(state="visible")
    assert await error.text_content() == "that is not this manager's API token"

    await page.fill("#token", TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}/ui/job/{job}")
    await page.locator("main h1").wait_for()
    cookies = await page.context.cookies()
    assert [(c["name"], c["httpOnly"]) for c in cookies] == [("wm_session", True)]
    assert TOKEN not in cookies[0]["value"]  # a signed session, never the token
    assert await page.evaluate("document.cookie") == ""  # scripts cannot read the token

    async with httpx.AsyncClient(base_url=base) as anonymous:
        refused = await anonymous.get(f"/api/job/{job}", headers={"Accept": "text/html"})
        assert refused.status_code == 401 and "API token" in refused.json()["error"]
        assert (await anonymous.get("/ui/", follow_redirects=False)).status_code == 303
    assert TOKEN not in site.manager.process.output


async def test_the_login_page_returns_only_to_the_uis_own_pages(site, page):
    base = site.manager.api_url
    await page.goto(f"{base}/ui/login?next=https%3A%2F%2Fevil.example%2Fui%2F")
    await page.fill("#token", TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}/ui/")
    await page.locator("h1", has_text="Overview").wait_for()
