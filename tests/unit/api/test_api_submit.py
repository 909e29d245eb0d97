"""POST /api/workflow/{name}: starting jobs, where the id comes from, and every refusal."""

from __future__ import annotations

import uuid

import pytest

from workflow_manager.errors import (
    BrokerError,
    DuplicateJob,
    InvalidJobId,
    InvalidPayload,
    UnknownWorkflow,
)

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
OTHER = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"


async def test_submit_starts_a_job_with_a_generated_id(client, service):
    response = await client.post("/api/workflow/wordcount", json={"text": "a b"})
    assert response.status_code == 200
    (key,) = response.json().keys()
    assert key == "id"
    job_id = response.json()["id"]
    assert str(uuid.UUID(job_id)) == job_id
    job = service.state.jobs[job_id]
    assert job.payload == {"text": "a b"}
    assert job.workflow.name == "wordcount"


async def test_submit_with_query_id(client, service):
    response = await client.post(f"/api/workflow/wordcount?id={JOB}", json={})
    assert response.json() == {"id": JOB}
    job = service.state.jobs[JOB]
    assert (job.workflow.name, job.payload) == ("wordcount", {})


async def test_submit_with_body_id_keeps_it_in_the_payload(client, service):
    response = await client.post("/api/workflow/wordcount", json={"id": JOB, "text": "x"})
    assert response.json() == {"id": JOB}
    assert service.state.jobs[JOB].payload == {"id": JOB, "text": "x"}


async def test_submit_canonicalises_ids_and_accepts_equal_query_and_body(client):
    response = await client.post(
        f"/api/workflow/wordcount?id={JOB.upper()}", json={"id": JOB.replace("-", "")}
    )
    assert response.status_code == 200
    assert response.json() == {"id": JOB}


async def test_non_string_body_id_is_payload_data_not_the_job_id(client, service):
    response = await client.post("/api/workflow/wordcount", json={"id": 42})
    assert response.status_code == 200
    job_id = response.json()["id"]
    assert service.state.jobs[job_id].payload == {"id": 42}


async def test_conflicting_ids_name_both_values(client, service):
    response = await client.post(f"/api/workflow/wordcount?id={JOB}", json={"id": OTHER})
    assert response.status_code == 400
    error = response.json()["error"]
    assert JOB in error and OTHER in error
    assert service.state.jobs == {}


@pytest.mark.parametrize(
    ("url", "body", "expected"),
    [
        ("/api/workflow/wordcount?id=nope", {}, "query parameter 'id' 'nope' is not a UUID"),
        ("/api/workflow/wordcount", {"id": "book-42"}, "body field 'id'"),
    ],
)
async def test_bad_uuid_is_400(client, url, body, expected):
    response = await client.post(url, json=body)
    assert response.status_code == 400
    assert expected in response.json()["error"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "request body is empty"),
        (b"   ", "request body is empty"),
        (b"{not json", "request body is not valid JSON"),
        (b'{"x": NaN}', "NaN is not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2]", "must be a JSON object (the job payload), got a list"),
        (b'"text"', "got a string"),
        (b"3", "got a number"),
        (b"null", "got null"),
        (b"true", "got a boolean"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
async def test_body_must_be_a_json_object(client, service, content, expected):
    headers = {"Content-Type": "application/json"}
    response = await client.post("/api/workflow/wordcount", content=content, headers=headers)
    assert response.status_code == 400
    assert expected in response.json()["error"]
    assert service.state.jobs == {}


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
async def test_a_body_not_sent_as_json_is_415(client, service, content_type):
    headers = {"content-type": content_type} if content_type else {}
    response = await client.post("/api/workflow/wordcount", content=b"{}", headers=headers)
    assert response.status_code == 415  # a page elsewhere can send these types: no CSRF
    assert "send 'Content-Type: application/json'" in response.json()["error"]
    assert service.state.jobs == {}
    headers = {"content-type": "Application/JSON; charset=utf-8"}
    response = await client.post("/api/workflow/wordcount", content=b"{}", headers=headers)
    assert response.status_code == 200


async def test_unknown_workflow_is_404_with_a_suggestion(client, service):
    response = await client.post("/api/workflow/wordcont", json={})
    assert response.status_code == 404
    error = response.json()["error"]
    assert "unknown workflow 'wordcont'" in error
    assert "did you mean 'wordcount'?" in error
    assert service.state.jobs == {}


async def test_unknown_workflow_wins_over_a_bad_body(client):
    response = await client.post("/api/workflow/nope", json=[])
    assert response.status_code == 404


async def test_duplicate_id_is_409(client):
    first = await client.post(f"/api/workflow/wordcount?id={JOB}", json={})
    assert first.status_code == 200
    again = await client.post(f"/api/workflow/parallel?id={JOB}", json={})
    assert again.status_code == 409
    assert again.json() == {"error": f"a job with id {JOB} already exists"}


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (UnknownWorkflow("unknown workflow 'wordcount' (reloaded away)"), 404),
        (InvalidPayload("payload must be a JSON object"), 400),
        (InvalidJobId("job id 'x' is not a UUID"), 400),
        (DuplicateJob("a job with this id already exists"), 409),
    ],
)
async def test_submit_errors_from_the_service_map_to_statuses(client, service, error, status):
    async def refuse(workflow, payload, job_id=None, trace=None, priority=0, *, not_before=None):
        raise error

    service.submit = refuse
    response = await client.post("/api/workflow/wordcount", json={})
    assert response.status_code == status
    assert response.json() == {"error": str(error)}


async def test_broker_error_from_the_service_is_503(client, service):
    async def refuse(workflow, payload, job_id=None, trace=None, priority=0, *, not_before=None):
        raise BrokerError("connection reset")

    service.submit = refuse
    response = await client.post("/api/workflow/wordcount", json={})
    assert response.status_code == 503
    assert response.json() == {"error": "RabbitMQ is unavailable: connection reset"}


async def test_submit_while_disconnected_is_503_and_starts_nothing(client, service):
    service.transport.connected = False
    response = await client.post("/api/workflow/wordcount", json={})
    assert response.status_code == 503
    assert "not connected to RabbitMQ" in response.json()["error"]
    assert service.state.jobs == {}


async def test_submit_with_a_priority_keeps_it_on_the_job_and_its_requests(client, service):
    response = await client.post(f"/api/workflow/wordcount?id={JOB}&priority=7", json={})
    assert response.status_code == 200
    assert service.state.jobs[JOB].priority == 7
    (request,) = [m for m in service.transport.published if m.queue == "split"]
    assert request.priority == 7
    detail = (await client.get(f"/api/job/{JOB}")).json()
    assert detail["priority"] == 7


@pytest.mark.parametrize("value", ["10", "-1", "high", "2.5"])
async def test_a_bad_priority_is_a_400_naming_the_parameter(client, service, value):
    response = await client.post(f"/api/workflow/wordcount?priority={value}", json={})
    assert response.status_code == 400
    assert "query parameter 'priority'" in response.json()["error"]
    assert not service.state.jobs
