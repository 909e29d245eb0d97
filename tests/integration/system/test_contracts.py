"""Schemas end to end: a real manager checks payloads, inputs and outputs; real workers answer."""

from __future__ import annotations

import json
import uuid

from .test_cli import cli

WORKFLOWS = """
workflows:
  - name: order
    payload_schema: {$ref: schemas/order.json}
    steps:
      - {name: start, queue: "{p}.start"}
      - name: charge
        depends: [start]
        queue: "{p}.charge"
        input_schema: {type: object, properties: {qty: {maximum: 10}}}
  - name: priced
    steps:
      - name: price
        queue: "{p}.price"
        retries: 1
        retry_backoff: {initial: 0, max: 0}
        output_schema: {type: object, required: [total]}
"""
QUEUES = ["start", "charge", "price"]
ORDER_SCHEMA = {
    "type": "object",
    "required": ["qty"],
    "properties": {"qty": {"type": "integer", "minimum": 1}},
}


async def _started(system, tmp_path):
    (tmp_path / "schemas").mkdir(exist_ok=True)
    (tmp_path / "schemas" / "order.json").write_text(json.dumps(ORDER_SCHEMA))
    return await system(WORKFLOWS, step_queues=QUEUES)


async def test_a_bad_payload_is_rejected_naming_the_path_rule_and_file(system, tmp_path):
    sys = await _started(system, tmp_path)
    queue = await sys.reply_queue()
    job_id = str(uuid.uuid4())
    await sys.trigger("order", {"qty": "3"}, job_id, queue.name)
    outcome = await sys.next_outcome(queue)
    assert outcome.status == "rejected"
    assert outcome.body["error"] == (
        "payload does not match the payload_schema of workflow 'order': at $.qty: '3' is not of"
        " type 'integer' (rule type) (schema: schemas/order.json)"
    )
    await sys.manager.process.wait_for_line(r"dead-lettered a message from .*\.jobs")
    assert (await sys.http.get(f"/api/job/{job_id}")).status_code == 404
    answer = await sys.http.post("/api/workflow/order", json={"qty": 0})
    assert answer.status_code == 400
    assert "at $.qty: 0 is less than the minimum of 1 (rule minimum)" in answer.text
    assert (await sys.run("order", {"qty": 3})).status == "completed"  # the $ref file works


async def test_a_bad_input_fails_the_step_without_a_request(system, tmp_path):
    sys = await _started(system, tmp_path)
    job_id = str(uuid.uuid4())
    outcome = await sys.run("order", {"qty": 11}, job_id)
    assert outcome.status == "failed"
    assert outcome.body["error"] == {
        "step": "charge",
        "message": "input of step 'charge' does not match its input_schema: at $.qty: 11 is"
        " greater than the maximum of 10 (rule maximum) (schema: inline)",
    }
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    charge = next(step for step in page["steps"] if step["name"] == "charge")
    assert charge["attempts"] == 0 and charge["history"] == []


async def test_a_bad_output_is_retried_and_then_fails_the_step(system, tmp_path):
    sys = await _started(system, tmp_path)
    job_id = str(uuid.uuid4())
    outcome = await sys.run("priced", {"qty": 1}, job_id)  # the worker echoes: no `total`
    assert outcome.status == "failed"
    assert outcome.body["error"]["step"] == "price"
    assert outcome.body["error"]["message"] == (
        "output of step 'price' does not match its output_schema: at $: 'total' is a required"
        " property (rule required) (schema: inline)"
    )
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    price = next(step for step in page["steps"] if step["name"] == "price")
    assert price["attempts"] == 2
    assert [a["outcome"] for a in price["history"]] == ["failed", "failed"]
    assert "'total' is a required property" in price["history"][0]["error"]


async def test_validate_rejects_a_missing_schema_file_and_an_invalid_schema(tmp_path):
    bad = tmp_path / "wf.yaml"
    bad.write_text(
        "workflows:\n  - name: w\n    payload_schema: {$ref: schemas/none.json}\n    steps:\n"
        "      - name: a\n        output_schema: {type: objekt}\n"
    )
    code, out, err = await cli("validate", str(bad))
    assert code == 1
    assert "wf.yaml:3: workflow 'w': payload_schema: no such schema file 'schemas/none.json'" in err
    assert "wf.yaml:6: workflow 'w', step 'a': output_schema: not a valid JSON Schema" in err
    assert "Traceback" not in out + err
