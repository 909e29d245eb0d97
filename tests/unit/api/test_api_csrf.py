"""Forged requests: a state-changing route takes only JSON, and never from another origin."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from workflow_manager.api import ApiToken, create_app

TOKEN = "s3cret-token-0f9a2c"
JOB = "3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
OWN = "http://manager"

CHANGES = [
    ("POST", "/api/workflow/wordcount", b'{"text": "a b"}'),
    ("POST", f"/api/job/{JOB}/retry", b""),
    ("DELETE", f"/api/job/{JOB}", b""),
    ("POST", f"/api/job/{JOB}/signal/approve", b"{}"),
    ("POST", "/api/schedules/wordcount/nightly/pause", b""),
    ("PUT", "/api/anything", b"{}"),  # methods and routes not named anywhere are covered too
    ("PATCH", "/api/jobs", b"{}"),
]


@pytest.fixture(params=[None, TOKEN], ids=["open", "token"])
async def http(request, service, clock) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app, with the token as a header when the app has one."""
    token = request.param
    app = create_app(service, clock=clock, api_token=ApiToken(token) if token else None)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=OWN, headers=headers) as client:
        yield client


@pytest.mark.parametrize(("method", "path", "body"), CHANGES)
@pytest.mark.parametrize(
    "sender",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://manager:8081"},  # another port of the same host is another origin
        {"Origin": "https://manager"},  # and so is another scheme
        {"Origin": "null"},  # a sandboxed frame, a data: URL
        {"Referer": "http://127.0.0.1:9999/attack.html"},
    ],
)
async def test_a_change_from_another_origin_is_403(http, service, method, path, body, sender):
    response = await http.request(method, path, content=body, headers={**JSON, **sender})
    assert response.status_code == 403
    error = response.json()["error"]
    assert f"{method} {path} refused" in error and "another site" in error
    assert service.state.jobs == {}


@pytest.mark.parametrize(("method", "path", "body"), CHANGES)
@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "text/plain"},
        FORM,
        {"Content-Type": "multipart/form-data; boundary=x"},
        {},  # a body with no type at all
    ],
)
async def test_a_change_that_is_not_json_is_415(http, service, method, path, body, headers):
    response = await http.request(method, path, content=body or b"x", headers=headers)
    assert response.status_code == 415
    assert "send 'Content-Type: application/json'" in response.json()["error"]
    assert service.state.jobs == {}


async def test_a_bodyless_change_names_no_other_type(http):
    response = await http.post(f"/api/job/{JOB}/retry", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    # With no body and no type (curl -X POST), nothing in it can be forged: it goes through.
    assert (await http.post(f"/api/job/{JOB}/retry")).status_code == 404


async def test_json_from_the_same_origin_or_from_no_page_passes(http, service):
    for sender in ({}, {"Origin": OWN}, {"Origin": "http://MANAGER:80"}, {"Referer": OWN + "/ui/"}):
        response = await http.post(
            "/api/workflow/wordcount", json={"text": "a"}, headers={**JSON, **sender}
        )
        assert response.status_code == 200, (sender, response.text)
    assert len(service.state.jobs) == 4


async def test_reads_are_not_refused_for_their_origin(http):
    response = await http.get("/api/jobs", headers={"Origin": "http://evil.example"})
    assert response.status_code == 200  # the browser keeps the answer from that page (no CORS)


async def test_the_login_form_from_another_origin_is_403(service, clock):
    app = create_app(service, clock=clock, api_token=ApiToken(TOKEN))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=OWN) as client:
        foreign = {"Origin": "http://evil.example"}
        response = await client.post("/ui/login", data={"token": TOKEN}, headers=foreign)
        assert response.status_code == 403 and "set-cookie" not in response.headers
        response = await client.post("/ui/login", data={"token": TOKEN}, headers={"Origin": OWN})
        assert response.status_code == 204  # a form, from the login page itself


async def test_openapi_documents_the_403_and_415(http):
    schema = (await http.get("/openapi.json")).json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            changes = method in ("post", "put", "patch", "delete")
            assert ("403" in operation["responses"]) == changes, (method, path)
            assert ("415" in operation["responses"]) == (changes and path != "/ui/login")
