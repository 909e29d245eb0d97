"""The browser session on a real manager, over plain HTTP: forged requests, foreign Hosts,
the session cookie, logout, the login throttle, and tokens refused at start."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid

import httpx
import pytest

from ..harness import ROOT

TOKEN = "tok-" + uuid.uuid4().hex
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""


async def _jobs(http: httpx.AsyncClient, **headers: str) -> list[dict]:
    return (await http.get("/api/workflow/manual", headers=headers)).json()["running"]


async def test_forged_changes_are_refused_with_and_without_a_token(system):
    sys_ = await system(MANUAL)  # the loopback default: no token
    base = sys_.manager.api_url
    attacks = [
        ({"Origin": "http://127.0.0.1:9", "Content-Type": "application/json"}, b"{}", 403),
        ({"Referer": "http://evil.example/page", "Content-Type": "application/json"}, b"{}", 403),
        ({"Content-Type": "text/plain"}, b"{}", 415),
        (FORM, b"a=1", 415),
    ]
    for headers, body, status in attacks:
        answer = await sys_.http.post("/api/workflow/manual", content=body, headers=headers)
        assert answer.status_code == status, (headers, answer.text)
    assert await _jobs(sys_.http) == []
    same = {"Origin": base, "Content-Type": "application/json"}
    assert (await sys_.http.post("/api/workflow/manual", json={}, headers=same)).is_success
    assert len(await _jobs(sys_.http)) == 1


async def test_a_foreign_host_is_refused_and_the_allowed_ones_answered(system):
    sys_ = await system(MANUAL, manager_args=("--allowed-hosts", "wm.example.test"))
    port = sys_.manager.api_url.rsplit(":", 1)[1]
    for host, status in [
        (f"rebound.attacker.test:{port}", 400),
        (f"localhost:{port}", 200),
        (f"127.0.0.1:{port}", 200),
        ("wm.example.test", 200),
    ]:
        answer = await sys_.http.get("/api/jobs", headers={"Host": host})
        assert answer.status_code == status, (host, answer.text)
        if status == 400:
            assert "--allowed-hosts" in answer.json()["error"]
    probe = await sys_.http.get("/healthz", headers={"Host": "kubelet.internal"})
    assert probe.status_code == 200


async def test_the_session_cookie_logout_and_the_raw_token(system):
    sys_ = await system(MANUAL, manager_env={"WM_API_TOKEN": TOKEN})
    http = sys_.http
    for name in ("wm_token", "wm_session"):
        raw = await http.get("/api/jobs", headers={"Cookie": f"{name}={TOKEN}"})
        assert raw.status_code == 401, name
    login = await http.post("/ui/login", content=f"token={TOKEN}".encode(), headers=FORM)
    assert login.status_code == 204
    session = http.cookies["wm_session"]
    assert (
        TOKEN not in login.headers["set-cookie"] and "Max-Age=43200" in login.headers["set-cookie"]
    )
    assert (await http.get("/api/jobs")).status_code == 200
    out = await http.post("/ui/logout", headers={"Content-Type": "application/json"})
    assert out.status_code == 204 and "wm_session" not in http.cookies
    replayed = await http.get("/api/jobs", headers={"Cookie": f"wm_session={session}"})
    assert replayed.status_code == 401
    assert TOKEN not in sys_.manager.process.output and session not in sys_.manager.process.output


async def test_wrong_logins_are_throttled(system):
    sys_ = await system(MANUAL, manager_env={"WM_API_TOKEN": TOKEN})

    async def guess(n: int) -> httpx.Response:
        return await sys_.http.post("/ui/login", content=f"token=guess-{n}".encode(), headers=FORM)

    answers = await asyncio.gather(*(guess(n) for n in range(300)))
    statuses = [a.status_code for a in answers]
    assert set(statuses) == {401, 429}
    assert statuses.count(401) <= 10 and statuses.count(429) >= 290  # 10 a minute by default
    throttled = next(a for a in answers if a.status_code == 429)
    assert 1 <= int(throttled.headers["retry-after"]) <= 60
    assert "too many wrong logins" in throttled.json()["error"]
    right = await sys_.http.post("/ui/login", content=f"token={TOKEN}".encode(), headers=FORM)
    assert right.status_code == 429  # until the wait is over, even the right token
    assert (
        await sys_.http.get("/api/jobs", headers={"Authorization": f"Bearer {TOKEN}"})
    ).is_success


@pytest.mark.parametrize(
    ("token", "said"),
    [
        ("short-token", "is 11 characters long: use at least 16"),
        ("jeton-très-secret-123", "has a non-ASCII character at position 9"),
    ],
)
async def test_an_unusable_token_stops_the_manager_at_start(token, said, tmp_path):
    env = {**os.environ, "WM_API_TOKEN": token}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "workflow_manager", "serve", "--config", str(ROOT / "workflows.yaml"),
        "--db", str(tmp_path / "wm.db"), "--port", "1", cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    text = err.decode()
    assert proc.returncode == 2, text
    assert f"--api-token (or WM_API_TOKEN): the API token {said}" in text
    assert "Traceback" not in text and token not in text + out.decode()
