"""The web UI with an API token: pages send a browser to the login page, the API stays 401."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from manager.api import ApiToken, create_app
from manager.api.access import COOKIE_NAME
from manager.api.ui import CSP

TOKEN = "s3cret-token"
JOB = "3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"


@pytest.fixture
async def guarded(service, clock) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app with an API token set; it sends no credentials of its own."""
    app = create_app(service, clock=clock, api_token=ApiToken(TOKEN))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        yield http


@pytest.mark.parametrize(
    ("path", "next_page"),
    [
        ("/", "%2Fui%2F"),
        ("/ui", "%2Fui%2F"),
        ("/ui/", "%2Fui%2F"),
        (f"/ui/job/{JOB}", f"%2Fui%2Fjob%2F{JOB}"),
        ("/ui/workflow/a b?x=1&y=2", "%2Fui%2Fworkflow%2Fa%20b%3Fx%3D1%26y%3D2"),
        ("/ui/dead-letters", "%2Fui%2Fdead-letters"),
    ],
)
async def test_a_page_without_the_token_sends_to_the_login_page(guarded, path, next_page):
    response = await guarded.get(path)
    assert response.status_code == 303
    assert response.headers["location"] == f"/ui/login?next={next_page}"
    assert response.headers["content-security-policy"] == CSP
    stale = await guarded.get(path, headers={"Cookie": f"{COOKIE_NAME}=old"})
    assert stale.status_code == 303  # a cookie from before a token change: log in again


async def test_the_login_page_and_the_assets_are_open(guarded):
    page = await guarded.get("/ui/login")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/ui/assets/login.js"></script>' in page.text
    assert page.headers["content-security-policy"] == CSP
    for asset in ("login.js", "style.css", "icon.svg"):
        assert (await guarded.get(f"/ui/assets/{asset}")).status_code == 200, asset


@pytest.mark.parametrize(
    "path", ["/api/jobs", f"/api/job/{JOB}", "/api/events", "/openapi.json", "/docs"]
)
async def test_the_api_stays_401_json_even_for_a_browser(guarded, path):
    response = await guarded.get(path, headers={"Accept": "text/html,*/*"})
    assert response.status_code == 401
    assert "needs its API token" in response.json()["error"]


async def test_after_login_the_pages_open(guarded):
    assert (await guarded.post("/ui/login", data={"token": TOKEN})).status_code == 204
    response = await guarded.get(f"/ui/job/{JOB}")  # the client keeps the cookie
    assert response.status_code == 200 and "app.js" in response.text
    assert (await guarded.get("/api/jobs")).status_code == 200
