"""The web UI's routes: the shell for every page, assets with their types, strict headers."""

from __future__ import annotations

import pytest

from workflow_manager.api.ui import CSP

PAGES = [
    "/ui/",
    "/ui/job/3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f",
    "/ui/workflow/wordcount",
    "/ui/dead-letters",
    "/ui/cluster",
]
ASSETS = [
    ("app.js", "text/javascript; charset=utf-8"),
    ("pages/job.js", "text/javascript; charset=utf-8"),
    ("style.css", "text/css; charset=utf-8"),
    ("icon.svg", "image/svg+xml"),
]


def assert_strict(headers) -> None:
    assert headers["content-security-policy"] == CSP
    assert "unsafe-inline" not in CSP and "unsafe-eval" not in CSP
    assert "script-src 'self';" in CSP and "default-src 'none';" in CSP
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"


async def test_the_front_page_is_the_ui(client):
    response = await client.get("/")
    assert (response.status_code, response.headers["location"]) == (307, "/ui/")
    assert_strict(response.headers)
    response = await client.get("/ui")
    assert (response.status_code, response.headers["location"]) == (307, "/ui/")


@pytest.mark.parametrize("path", PAGES)
async def test_every_page_is_the_one_shell_with_strict_headers(client, path):
    response = await client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert '<script type="module" src="/ui/assets/app.js"></script>' in response.text
    assert_strict(response.headers)


@pytest.mark.parametrize(("path", "media_type"), ASSETS)
async def test_assets_are_served_with_their_type(client, path, media_type):
    response = await client.get(f"/ui/assets/{path}")
    assert response.status_code == 200
    assert response.headers["content-type"] == media_type
    assert response.headers["cache-control"] == "no-cache" and "etag" in response.headers
    assert_strict(response.headers)


@pytest.mark.parametrize(
    "path",
    ["__init__.py", "nope.js", "index.html", "..%2F..%2Fpyproject.toml", "%2e%2e/api/ui.py"],
)
async def test_anything_but_a_script_style_or_icon_is_404(client, path):
    response = await client.get(f"/ui/assets/{path}")
    assert response.status_code == 404
    assert response.json()["error"].startswith("no UI asset")
    assert_strict(response.headers)  # error answers on UI paths get the headers too


async def test_an_unknown_ui_page_is_404_with_the_headers(client):
    response = await client.get("/ui/nothing/here")
    assert response.status_code == 404
    assert_strict(response.headers)


async def test_api_answers_do_not_get_the_ui_headers(client):
    response = await client.get("/api/jobs")
    assert response.status_code == 200 and "content-security-policy" not in response.headers


async def test_the_ui_pages_are_not_in_the_openapi_document(client):
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert [p for p in paths if p == "/" or p.startswith("/ui")] == []
