"""The OpenAPI document declares what the server accepts: job ids as UUIDs, `?id=` not nullable."""

from __future__ import annotations

UUID_SCHEMA = {"type": "string", "format": "uuid"}


async def test_job_ids_in_paths_are_declared_as_uuids(client):
    schema = (await client.get("/openapi.json")).json()
    for path, method in [
        ("/api/job/{job_id}", "get"),
        ("/api/job/{job_id}", "delete"),
        ("/api/job/{job_id}/retry", "post"),
    ]:
        (param,) = schema["paths"][path][method]["parameters"]
        assert (param["name"], param["in"], param["required"]) == ("job_id", "path", True)
        assert param["schema"]["format"] == "uuid" and param["schema"]["type"] == "string"


async def test_the_submitted_job_id_is_a_uuid_in_the_query_and_the_body(client):
    post = (await client.get("/openapi.json")).json()["paths"]["/api/workflow/{name}"]["post"]
    queries = {p["name"]: p for p in post["parameters"] if p["in"] == "query"}
    assert {"id", "delay", "not_before"} <= set(queries)
    query_id = queries["id"]
    assert query_id["schema"] == UUID_SCHEMA
    assert query_id["required"] is False
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert body["type"] == "object" and body["additionalProperties"] is True
    assert body["properties"]["id"] == {"anyOf": [UUID_SCHEMA, {"not": {"type": "string"}}]}


async def test_the_priority_is_an_integer_from_0_to_9_in_the_query(client):
    post = (await client.get("/openapi.json")).json()["paths"]["/api/workflow/{name}"]["post"]
    (priority,) = [p for p in post["parameters"] if p["name"] == "priority"]
    assert priority["in"] == "query" and priority["required"] is False
    schema = priority["schema"]
    assert (schema["type"], schema["minimum"], schema["maximum"]) == ("integer", 0, 9)


async def test_an_empty_query_id_is_still_a_clear_400(client):
    response = await client.post("/api/workflow/wordcount?id=", json={})
    assert response.status_code == 400
    assert "query parameter 'id' '' is not a UUID" in response.json()["error"]
