"""DNS rebinding: the manager answers only Host headers that name it."""

from __future__ import annotations

import socket

import httpx
import pytest

from workflow_manager.api import create_app
from workflow_manager.api.hosts import HostNames, host_of
from workflow_manager.settings import HttpSettings


@pytest.mark.parametrize(
    ("header", "host"),
    [
        ("127.0.0.1:8080", "127.0.0.1"),
        ("LocalHost", "localhost"),
        ("[::1]:8080", "::1"),
        ("::1", "::1"),
        ("manager.example.com.", "manager.example.com"),
        ("", None),
    ],
)
def test_host_of_a_header(header, host):
    assert host_of(header) == host


@pytest.mark.parametrize(
    ("bind", "allowed", "host", "answered"),
    [
        ("127.0.0.1", (), "127.0.0.1", True),
        ("127.0.0.1", (), "localhost", True),
        ("127.0.0.1", (), "::1", True),
        ("127.0.0.1", (), "attacker.example", False),
        ("127.0.0.1", (), "10.1.2.3", False),
        ("10.1.2.3", (), "10.1.2.3", True),
        ("127.0.0.1", ("wm.example.com:8080",), "wm.example.com", True),
        ("127.0.0.1", (".example.com",), "a.b.example.com", True),
        ("127.0.0.1", (".example.com",), "example.com", True),
        ("127.0.0.1", (".example.com",), "badexample.com", False),
        ("127.0.0.1", ("*",), "anything.example", True),
        ("0.0.0.0", (), "192.168.7.7", True),  # the wildcard is every address
        ("0.0.0.0", (), "fe80::1", True),
        ("0.0.0.0", (), socket.gethostname().lower(), True),
        ("0.0.0.0", (), "attacker.example", False),
        ("::", ("wm.internal",), "wm.internal", True),
    ],
)
def test_the_names_a_manager_answers(bind, allowed, host, answered):
    assert HostNames.served(bind, None, allowed).allows(host) is answered


def test_the_advertised_host_is_answered():
    names = HostNames.served("127.0.0.1", "http://manager-2.cluster:8080", ())
    assert names.allows("manager-2.cluster") and not names.allows("manager-3.cluster")


async def _status(app, host: str, path: str = "/api/jobs") -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
        return await client.get(path)


async def test_an_unknown_host_is_400_naming_it_and_the_option(service, clock):
    http = HttpSettings(allowed_hosts=("wm.example.com",))
    app = create_app(service, clock=clock, http=http, bind_host="127.0.0.1")
    refused = await _status(app, "rebound.attacker.example:8080")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert "'rebound.attacker.example:8080'" in error and "--allowed-hosts" in error
    for host in ("127.0.0.1:8080", "localhost:1", "[::1]:8080", "wm.example.com"):
        assert (await _status(app, host)).status_code == 200, host
    for probe in ("/healthz", "/readyz"):  # orchestrators call them by names we cannot know
        assert (await _status(app, "pod.internal", probe)).status_code != 400


async def test_without_a_bind_host_every_host_is_answered(service, clock):
    app = create_app(service, clock=clock)
    assert (await _status(app, "anything.example")).status_code == 200


async def test_a_wildcard_without_allowed_hosts_warns_at_start(service, clock, caplog):
    create_app(service, clock=clock, bind_host="0.0.0.0")
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "--allowed-hosts" in warning.getMessage()
    caplog.clear()
    create_app(service, clock=clock, bind_host="0.0.0.0", http=HttpSettings(allowed_hosts=("a",)))
    create_app(service, clock=clock, bind_host="127.0.0.1")
    assert [r for r in caplog.records if r.levelname == "WARNING"] == []
