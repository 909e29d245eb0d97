"""The app as a whole: health, error shapes for unknown routes and methods, and the OpenAPI docs."""

from __future__ import annotations

import httpx
import pytest

from workflow_manager.api import create_app


async def test_healthz_ok_when_connected(client):
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_healthz_503_when_disconnected_says_since_when(client, service):
    service.transport.connected = False
    service.transport.down_for_s = 2.5
    response = await client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "disconnected", "since": 2.5}


async def test_readyz_says_why_the_manager_cannot_take_work(client, service):
    assert (await client.get("/readyz")).json() == {"status": "ready", "reasons": []}
    service.transport.connected = False
    service.transport.down_for_s = 1.25
    response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["reasons"] == ["not connected to RabbitMQ (for 1.2s)"]
    service.transport.connected = True
    await service.journal.close()
    await service.reply("6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f", "split")  # a write fails
    response = await client.get("/readyz")
    assert response.status_code == 503
    (reason,) = response.json()["reasons"]
    assert reason.startswith("stopped taking work:") and "journal" in reason


@pytest.mark.parametrize("path", ["/nope", "/api", "/api/job", "/api/workflow", "/api/jobs/extra"])
async def test_unknown_route_is_404_with_an_error_body(client, path):
    response = await client.get(path)
    assert response.status_code == 404
    assert response.json() == {
        "error": f"no route GET {path}; the API is described at /docs",
    }


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/api/jobs", "GET"),
        ("PUT", "/api/workflow/wordcount", "GET, POST"),
        ("POST", "/healthz", "GET"),
    ],
)
async def test_wrong_method_is_405_with_an_error_body(client, method, path, allowed):
    response = await client.request(method, path)
    assert response.status_code == 405
    assert response.json() == {
        "error": f"{method} is not allowed on {path} (allowed: {allowed})",
    }
    assert response.headers["allow"] == allowed


async def test_a_bug_is_500_with_an_error_body_and_no_details(service, clock):
    service.workflows = None  # any route reading the workflows now raises AttributeError
    app = create_app(service, clock=clock)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        response = await http.get("/api/workflows")
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal error in workflow-manager; see its log for details",
    }


async def test_openapi_documents_every_route_without_422(client):
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "workflow-manager"
    assert schema["info"]["version"]
    assert set(schema["paths"]) == {
        "/api/workflows",
        "/api/limits",
        "/api/workflow/{name}",
        "/api/jobs",
        "/api/job/{job_id}",
        "/api/job/{job_id}/retry",
        "/api/job/{job_id}/fork",
        "/api/jobs/bulk",
        "/api/bulk/{bulk_id}",
        "/api/job/{job_id}/pause",
        "/api/job/{job_id}/resume",
        "/api/schedules",
        "/api/schedules/{workflow}/{name}/pause",
        "/api/schedules/{workflow}/{name}/resume",
        "/api/cluster",
        "/api/job/{job_id}/signal/{step}",
        "/api/job/{job_id}/steps",
        "/api/job/{job_id}/children",
        "/api/jobs/recent",
        "/api/overview",
        "/api/workflow/{name}/definition",
        "/api/payloads/{store}/{key}",
        "/healthz",
        "/readyz",
    }
    assert "422" not in response.text
    assert "HTTPValidationError" not in response.text
    post = schema["paths"]["/api/workflow/{name}"]["post"]
    assert set(post["responses"]) == {"200", "400", "403", "404", "409", "415", "503"}
    assert post["requestBody"]["content"]["application/json"]["schema"]["type"] == "object"


async def test_docs_page_is_served(client):
    response = await client.get("/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()


async def test_the_cluster_of_a_manager_without_partitions_is_empty(client):
    response = await client.get("/api/cluster")
    assert response.status_code == 200
    assert response.json() == {"partitions": None, "manager": None, "managers": [], "leases": []}
