"""GET /api/payloads/{store}/{key}: a stored value downloaded, errors named, in the OpenAPI doc."""

from __future__ import annotations

import json

import httpx

from payload_refs import MemoryStore
from payload_refs.stores import CHUNK
from tests.unit.api.conftest import Service
from workflow_manager.api import ApiToken, create_app
from workflow_manager.api.payloads import download_path

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"
TOKEN = "s3cret-token-0f9a2c"


async def _stored(service: Service, value: object) -> tuple[MemoryStore, bytes, str]:
    store = MemoryStore("main")
    service.payload_stores["main"] = store
    data = json.dumps(value).encode()
    ref = await store.put(JOB, data)
    return store, data, download_path(ref)


async def test_a_stored_value_downloads_as_a_json_attachment(
    service: Service, client: httpx.AsyncClient
):
    # Over one chunk, so the answer is streamed in more than one piece.
    _, data, path = await _stored(service, {"text": "x" * (CHUNK + 10)})
    response = await client.get(path)
    assert response.status_code == 200
    assert response.content == data
    assert response.headers["content-type"] == "application/json"
    digest = path.split("?")[0].rsplit("/", 1)[-1]
    assert response.headers["content-disposition"] == f'attachment; filename="{digest}.json"'


async def test_without_the_query_the_digest_comes_from_the_key(
    service: Service, client: httpx.AsyncClient
):
    store = MemoryStore("main", where="memory")
    service.payload_stores["main"] = store
    data = b'{"a": 1}'
    ref = await store.put(JOB, data)
    response = await client.get(f"/api/payloads/main/{ref.key}?size={len(data)}")
    assert (response.status_code, response.content) == (200, data)


async def test_an_unknown_store_is_a_404_naming_it_and_the_known_ones(
    service: Service, client: httpx.AsyncClient
):
    await _stored(service, {"a": 1})
    response = await client.get(f"/api/payloads/other/{JOB}/{'0' * 64}")
    assert response.status_code == 404
    assert response.json() == {"error": "no payload store named 'other' (stores: main)"}


async def test_without_any_store_the_404_says_so(client: httpx.AsyncClient):
    response = await client.get(f"/api/payloads/main/{JOB}/{'0' * 64}")
    assert response.status_code == 404
    assert "without --payload-store" in response.json()["error"]


async def test_a_missing_value_is_a_404_naming_the_reference(
    service: Service, client: httpx.AsyncClient
):
    store, _, path = await _stored(service, {"a": 1})
    store.values.clear()  # removed by retention, say
    response = await client.get(path)
    assert response.status_code == 404
    uri = "wm://main/" + path.split("?")[0].removeprefix("/api/payloads/main/")
    assert response.json() == {"error": f"{uri}: not found in memory"}


async def test_a_malformed_key_is_a_400(service: Service, client: httpx.AsyncClient):
    await _stored(service, {"a": 1})
    response = await client.get("/api/payloads/main/a/%2E%2E/b")
    assert response.status_code == 400
    assert "is not a payload key" in response.json()["error"]
    response = await client.get("/api/payloads/main/a%20b")
    assert response.status_code == 400


async def test_a_malformed_digest_is_a_400(service: Service, client: httpx.AsyncClient):
    await _stored(service, {"a": 1})
    response = await client.get(f"/api/payloads/main/{JOB}/x?sha256=nothex")
    assert response.status_code == 400
    assert "sha256" in response.json()["error"]


async def test_the_route_is_in_the_openapi_document(client: httpx.AsyncClient):
    schema = (await client.get("/openapi.json")).json()
    operation = schema["paths"]["/api/payloads/{store}/{key}"]["get"]
    assert set(operation["responses"]) >= {"200", "400", "404"}
    assert "422" not in operation["responses"]


async def test_with_an_api_token_a_download_needs_it(service: Service, clock):
    _, data, path = await _stored(service, {"a": 1})
    app = create_app(service, clock=clock, api_token=ApiToken(TOKEN))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        assert (await http.get(path)).status_code == 401
        response = await http.get(path, headers={"Authorization": f"Bearer {TOKEN}"})
        assert (response.status_code, response.content) == (200, data)
