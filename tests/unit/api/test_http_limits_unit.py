"""The request-size middleware, the event-stream slots and the replay choices, without a server:
an app on httpx's ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI, HTTPException, Request
from pydantic import ValidationError

from workflow_manager.api.deadletters import ReplayRequest
from workflow_manager.api.errors import install_error_handlers
from workflow_manager.api.events import StreamSlots
from workflow_manager.api.limits import RequestLimits
from workflow_manager.settings import HttpSettings

SETTINGS = HttpSettings(max_body_bytes=2048, max_url_bytes=512, max_header_bytes=2048)


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app, [])

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, int]:
        return {"read": len(await request.body())}

    app.add_middleware(RequestLimits, settings=SETTINGS)
    return app


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        yield http


async def test_a_body_within_the_limit_is_read(client):
    answer = await client.post("/echo", content=b"x" * 2048)
    assert answer.json() == {"read": 2048}


async def test_a_declared_length_over_the_limit_is_refused_before_the_app(client):
    answer = await client.post("/echo", content=b"x" * 2049)
    assert answer.status_code == 413
    assert answer.json() == {
        "error": "the request body is over 2048 bytes, the limit (--max-body-bytes)"
    }
    assert answer.headers["connection"] == "close"


async def test_a_streamed_body_is_refused_as_it_passes_the_limit(client):
    sent = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            sent.append(1000)
            yield b"x" * 1000

    answer = await client.post("/echo", content=chunks())
    assert answer.status_code == 413 and "--max-body-bytes" in answer.json()["error"]
    assert answer.headers["connection"] == "close"


@pytest.mark.parametrize(
    ("path", "headers", "status", "option"),
    [
        ("/echo?" + "q" * 600, {}, 414, "--max-url-bytes"),
        ("/echo", {"x-big": "h" * 3000}, 431, "--max-header-bytes"),
        ("/echo", {"content-length": "lots"}, 400, "Content-Length"),
    ],
)
async def test_urls_and_heads_over_their_limits_are_refused(client, path, headers, status, option):
    answer = await client.post(path, content=b"{}", headers=headers)
    assert answer.status_code == status and option in answer.json()["error"]


def test_stream_slots_refuse_past_the_limit_and_free_a_place_when_given_back():
    slots = StreamSlots(2)
    slots.take()
    slots.take()
    with pytest.raises(HTTPException) as refused:
        slots.take()
    assert refused.value.status_code == 503 and refused.value.headers == {"Retry-After": "1"}
    assert "--max-event-streams" in refused.value.detail
    slots.give_back()
    slots.take()
    assert slots.open == 2


@pytest.mark.parametrize(
    "body", [{"id": "9c1e4b7a02d35f68"}, {"correlation_id": "j:s"}, {"all": True}]
)
def test_a_replay_names_one_letter_one_correlation_id_or_all(body):
    assert ReplayRequest.model_validate(body).model_fields_set == set(body)


@pytest.mark.parametrize(
    "body", [{}, {"id": "a", "all": True}, {"id": ""}, {"all": False}, {"id": "a", "x": 1}]
)
def test_any_other_replay_choice_is_refused(body):
    with pytest.raises(ValidationError):
        ReplayRequest.model_validate(body)
