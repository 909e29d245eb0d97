"""The UI's session cookie and the login throttle: pure logic on a fake clock, then the routes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from workflow_manager.api import ApiToken, create_app
from workflow_manager.api.sessions import COOKIE_NAME, SECURE_COOKIE_NAME, LoginThrottle, Sessions
from workflow_manager.settings import HttpSettings

from .conftest import FakeClock

TOKEN = "s3cret-token-0f9a2c"


def test_a_session_is_signed_expires_and_can_be_ended():
    clock = FakeClock(1000.0)
    sessions = Sessions(ApiToken(TOKEN), ttl_s=60, clock=clock)
    first, second = sessions.open(), sessions.open()
    assert first != second and TOKEN not in first
    assert sessions.expires_at(first) == 1060
    clock.advance(59)
    assert sessions.expires_at(first) == 1060
    assert sessions.end(first) and sessions.expires_at(first) is None  # logged out
    assert sessions.expires_at(second) == 1060  # the other session goes on
    assert not sessions.end(first)
    clock.advance(1)
    assert sessions.expires_at(second) is None  # expired


def test_a_session_is_good_on_every_manager_with_the_same_token_only():
    value = Sessions(ApiToken(TOKEN), ttl_s=60).open()
    assert Sessions(ApiToken(TOKEN), ttl_s=60).expires_at(value) is not None
    assert Sessions(ApiToken(TOKEN + "-new"), ttl_s=60).expires_at(value) is None


@pytest.mark.parametrize(
    "change",
    [lambda v: "9" + v, lambda v: v[:-1] + ("B" if v.endswith("A") else "A"), lambda v: v + "."],
)
def test_a_forged_or_altered_session_is_refused(change):
    sessions = Sessions(ApiToken(TOKEN), ttl_s=60)
    value = sessions.open()
    assert sessions.expires_at(change(value)) is None
    for junk in ("", "x", "1.2.3", TOKEN, "..", "१२.a.b"):
        assert sessions.expires_at(junk) is None


def test_wrong_logins_past_the_limit_wait_until_the_oldest_leaves_the_minute():
    clock = FakeClock(0.0)
    throttle = LoginThrottle(per_minute=3, clock=clock)
    for _ in range(3):
        assert throttle.wait_s("1.2.3.4") == 0
        throttle.failed("1.2.3.4")
        clock.advance(10)
    assert throttle.wait_s("1.2.3.4") == 30  # the first failure (t=0) leaves at t=60
    assert throttle.wait_s("5.6.7.8") == 0  # per address
    clock.advance(30)
    assert throttle.wait_s("1.2.3.4") == 0
    throttle.succeeded("1.2.3.4")
    assert throttle.wait_s("1.2.3.4") == 0


def test_the_throttle_keeps_a_bounded_number_of_addresses():
    clock = FakeClock(0.0)
    throttle = LoginThrottle(per_minute=1, clock=clock)
    throttle.MAX_ADDRESSES = 100
    for n in range(1000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(throttle._failures) <= 100


@pytest.fixture
async def app_client(service) -> AsyncIterator[tuple[httpx.AsyncClient, FakeClock]]:
    clock = FakeClock(1000.0)
    http = HttpSettings(login_attempts_per_minute=3)
    app = create_app(service, clock=clock, api_token=ApiToken(TOKEN), http=http)
    app.state.login_throttle = LoginThrottle(3, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as client:
        yield client, clock


async def test_logins_past_the_limit_are_429_even_the_right_one_then_it_works(app_client):
    client, clock = app_client
    answers = [
        (await client.post("/ui/login", data={"token": "guess"})).status_code for _ in range(5)
    ]
    assert answers == [401, 401, 401, 429, 429]
    throttled = await client.post("/ui/login", data={"token": TOKEN})
    assert throttled.status_code == 429 and "set-cookie" not in throttled.headers
    assert throttled.headers["retry-after"] == "60"
    assert "too many wrong logins" in throttled.json()["error"]
    clock.advance(60)
    assert (await client.post("/ui/login", data={"token": TOKEN})).status_code == 204


@pytest.mark.parametrize("token", ["jeton-privé-0123456789", "\U0001f511" * 20])
async def test_a_non_ascii_login_is_401_never_500(app_client, token):
    client, _ = app_client
    response = await client.post("/ui/login", data={"token": token})
    assert response.status_code == 401
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    surrogate = await client.post("/ui/login", content=b"token=%ED%A0%80", headers=form)
    assert surrogate.status_code == 400 and "not UTF-8" in surrogate.json()["error"]


async def test_logout_ends_the_session_and_clears_the_cookie(app_client):
    client, _ = app_client
    assert (await client.post("/ui/login", data={"token": TOKEN})).status_code == 204
    session = client.cookies[COOKIE_NAME]
    assert (await client.get("/api/jobs")).status_code == 200
    out = await client.post("/ui/logout", headers={"Content-Type": "application/json"})
    assert out.status_code == 204
    assert out.headers["set-cookie"].startswith(f'{COOKIE_NAME}=""; ')
    assert "max-age=0" in out.headers["set-cookie"].lower()
    # The same cookie, kept by someone who copied it, no longer opens anything.
    replayed = await client.get("/api/jobs", headers={"Cookie": f"{COOKIE_NAME}={session}"})
    assert replayed.status_code == 401 and "log in again" in replayed.json()["error"]
    refused = await client.post("/ui/logout", headers={"Content-Type": "text/plain"})
    assert refused.status_code == 415


async def test_over_https_the_cookie_is_secure_and_host_prefixed(service):
    app = create_app(service, api_token=ApiToken(TOKEN))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://manager") as client:
        response = await client.post("/ui/login", data={"token": TOKEN})
        cookie = response.headers["set-cookie"]
        assert cookie.startswith(f"{SECURE_COOKIE_NAME}=")
        attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
        assert {"secure", "httponly", "samesite=strict", "path=/"} <= attributes
        assert (await client.get("/api/jobs")).status_code == 200
        assert (await client.get("/ui/session")).json()["expires_at"] is not None
