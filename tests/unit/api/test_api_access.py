"""The API token: who gets in, what a refusal says, the UI's login cookie and pages, the docs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from workflow_manager.api import ApiToken, create_app
from workflow_manager.api.access import COOKIE_NAME
from workflow_manager.api.ui import CSP

TOKEN = "s3cret-token-0f9a2c"
FORM = "application/x-www-form-urlencoded"
JOB = "3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"


@pytest.fixture
async def guarded(service, clock) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app with an API token set; it sends no credentials of its own."""
    app = create_app(service, clock=clock, api_token=ApiToken(TOKEN))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        yield http


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_token_never_shows_in_a_repr():
    token = ApiToken(TOKEN)
    assert TOKEN not in repr(token) and TOKEN not in str(token) and TOKEN not in f"{[token]}"
    assert token.matches(TOKEN) and token.matches(TOKEN.encode())
    assert not token.matches(TOKEN + "x") and not token.matches("") and not token.matches(None)


def test_an_empty_token_is_refused():
    with pytest.raises(ValueError, match="cannot be empty"):
        ApiToken("")


@pytest.mark.parametrize(
    ("secret", "expected"),
    [
        ("Zq", "is 2 characters long: use at least 16"),
        ("fifteen-chars-x", "is 15 characters long"),
        ("sixteen-chars-xé", "non-ASCII character at position 16"),
        ("tab\there-sixteen-chars", "control character at position 4"),
        (" sixteen-chars-xx", "starts or ends with a space"),
    ],
)
def test_a_token_no_client_could_use_is_refused_without_quoting_it(secret, expected):
    with pytest.raises(ValueError, match=expected) as raised:
        ApiToken(secret)
    assert secret.strip() not in str(raised.value)
    ApiToken("x" * 16)  # 16 printable ASCII characters are enough


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/workflows", "GET"),
        ("/api/jobs", "GET"),
        (f"/api/job/{JOB}", "GET"),
        (f"/api/job/{JOB}", "DELETE"),
        (f"/api/job/{JOB}/retry", "POST"),
        ("/api/workflow/wordcount", "POST"),
        ("/openapi.json", "GET"),
        ("/docs", "GET"),
        ("/ui/", "POST"),  # routes added later are covered without naming them
        ("/ui/job/x", "DELETE"),
        ("/no/such/route", "GET"),
    ],
)
async def test_every_route_but_the_probes_needs_the_token(guarded, path, method):
    response = await guarded.request(method, path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="workflow-manager"'
    assert response.json() == {
        "error": "this manager needs its API token: send 'Authorization: Bearer <token>' "
        "(the manager's --api-token / WM_API_TOKEN)"
    }


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/metrics/"])
async def test_probes_need_no_token(guarded, path):
    response = await guarded.get(path)
    assert response.status_code != 401  # /metrics may not be served by this app: 404 then


async def test_the_right_bearer_token_gets_in(guarded):
    response = await guarded.get("/api/jobs", headers=bearer())
    assert response.status_code == 200
    assert response.json() == {"jobs": []}
    response = await guarded.get("/api/jobs", headers={"Authorization": f"bearer  {TOKEN} "})
    assert response.status_code == 200


async def test_a_wrong_token_is_401_invalid_token_and_not_echoed(guarded):
    response = await guarded.get("/api/jobs", headers=bearer("guess"))
    assert response.status_code == 401
    assert response.headers["www-authenticate"].endswith('error="invalid_token"')
    assert "not this manager's" in response.json()["error"]
    assert "guess" not in response.text and TOKEN not in response.text


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", TOKEN])
async def test_a_header_that_is_not_a_bearer_token_is_explained(guarded, header):
    response = await guarded.get("/api/jobs", headers={"Authorization": header})
    assert response.status_code == 401
    error = response.json()["error"]
    assert error.startswith("the Authorization header is not 'Bearer <token>'")
    assert TOKEN not in error and "dXNlcjpwYXNz" not in error


@pytest.mark.parametrize("name", [COOKIE_NAME, "__Host-wm_session", "wm_token"])
async def test_a_cookie_holding_the_raw_token_is_refused(guarded, name):
    response = await guarded.get("/api/jobs", headers={"Cookie": f"{name}={TOKEN}"})
    assert response.status_code == 401
    assert TOKEN not in response.text
    stale = await guarded.get("/api/jobs", headers={"Cookie": f"{COOKIE_NAME}=old"})
    assert stale.status_code == 401 and "log in again" in stale.json()["error"]


async def test_login_sets_an_expiring_httponly_strict_session_that_opens_the_api(guarded):
    response = await guarded.post("/ui/login", data={"token": TOKEN})
    assert response.status_code == 204
    cookie = response.headers["set-cookie"]
    name, _, value = cookie.split(";")[0].partition("=")
    assert name == COOKIE_NAME and TOKEN not in cookie and len(value) > 60
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/", "max-age=43200"} <= attributes
    assert "secure" not in attributes  # plain HTTP: a Secure cookie would never come back
    assert (await guarded.get("/api/jobs")).status_code == 200  # the client keeps the cookie
    assert (await guarded.get("/ui/session")).json()["expires_at"] > 0


async def test_login_with_a_wrong_token_is_401_and_sets_nothing(guarded):
    response = await guarded.post("/ui/login", data={"token": "guess"})
    assert response.status_code == 401
    assert "set-cookie" not in response.headers
    assert response.json() == {"error": "that is not this manager's API token"}
    assert (await guarded.get("/api/jobs")).status_code == 401


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"data": {"password": TOKEN}}, "exactly one non-empty field 'token'"),
        ({"data": {"token": ""}}, "exactly one non-empty field 'token'"),
        ({"json": {"token": TOKEN}}, "send the token as a form"),
        ({"content": b"token=%ff", "headers": {"Content-Type": FORM}}, "not UTF-8"),
    ],
)
async def test_login_without_a_token_field_is_400(guarded, kwargs, expected):
    response = await guarded.post("/ui/login", **kwargs)
    assert response.status_code == 400
    assert expected in response.json()["error"]


async def test_without_a_token_everything_is_open(client):
    assert (await client.get("/api/jobs")).status_code == 200
    response = await client.post("/ui/login", data={"token": "anything"})
    assert response.status_code == 404  # nothing to log in to
    assert (await client.get("/ui/login")).status_code == 404
    schema = (await client.get("/openapi.json")).json()
    assert "securitySchemes" not in schema.get("components", {}) and "security" not in schema
    assert '"401"' not in (await client.get("/openapi.json")).text


async def test_openapi_declares_the_token_and_its_401(guarded):
    schema = (await guarded.get("/openapi.json", headers=bearer())).json()
    assert schema["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "--api-token",
    }
    assert schema["security"] == [{"bearer": []}, {"cookie": []}]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if path in ("/healthz", "/readyz", "/ui/login", "/ui/logout"):
                assert operation["security"] == [], (method, path)
            else:
                assert "security" not in operation, (method, path)
            public = path in ("/healthz", "/readyz", "/ui/logout")
            public = public or (path, method) == ("/ui/login", "get")
            assert ("401" in operation["responses"]) != public, (method, path)


# -- the web UI: a browser is sent to the login page, the API stays 401 ------------------


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
