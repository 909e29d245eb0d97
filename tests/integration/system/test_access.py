"""The API token on a real manager: the API and the CLI with and without it; never logged."""

from __future__ import annotations

import uuid

import httpx

from .test_cli import cli

TOKEN = "tok-" + uuid.uuid4().hex

MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""


async def test_a_manager_with_a_token_refuses_clients_without_it(system):
    sys_ = await system(
        MANUAL, manager_args=("--log-level", "debug"), manager_env={"WM_API_TOKEN": TOKEN}
    )
    await sys_.manager.process.wait_for_line(r"needs the API token")
    assert (await sys_.http.get("/healthz")).status_code == 200
    assert (await sys_.http.get("/readyz")).status_code == 200
    refused = await sys_.http.get("/api/jobs")
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert (await sys_.http.get("/api/jobs", headers=auth)).json() == {"jobs": []}

    job_id = str(uuid.uuid4())
    await sys_.trigger("manual", {}, job_id)
    await sys_.take("hand")
    api = ["--api-url", sys_.manager.api_url]
    code, _, err = await cli("status", job_id, *api)
    assert code == 1 and "needs its API token" in err and "Traceback" not in err
    code, out, err = await cli("status", job_id, *api, "--api-token", TOKEN)
    assert code == 0 and job_id in out and "running" in out, err
    code, _, err = await cli("cancel", job_id, *api, "--api-token", "wrong")
    assert code == 1 and "not this manager's" in err
    code, out, err = await cli("cancel", job_id, *api, "--api-token", TOKEN)
    assert (code, out.strip()) == (0, f"job {job_id}: cancelled"), err
    assert TOKEN not in sys_.manager.process.output


async def test_a_manager_open_to_the_network_without_a_token_says_so(system):
    sys_ = await system(MANUAL, manager_args=("--host", "0.0.0.0"))
    line = await sys_.manager.process.wait_for_line(r"with no API token")
    assert "WARNING" in line and "--api-token" in line
    # The harness reaches it on 127.0.0.1, which 0.0.0.0 includes.
    async with httpx.AsyncClient(base_url=sys_.manager.api_url) as http:
        assert (await http.get("/api/jobs")).status_code == 200


async def test_a_manager_on_loopback_without_a_token_does_not_warn(system):
    sys_ = await system(MANUAL)
    await sys_.manager.process.wait_for_line(r"consuming replies")
    assert "no API token" not in sys_.manager.process.output
