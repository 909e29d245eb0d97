"""`when` end to end: a real manager skips steps by their input; workers never see them."""

from __future__ import annotations

import json
import uuid

from workflow_manager.events.sse import read_events

from .test_cli import cli

DIAMOND = """
workflows:
  - name: order
    steps:
      - {name: start, queue: "{p}.start"}
      - name: ship
        depends: [start]
        queue: "{p}.ship"
        when: "shipping_method != 'pickup'"
      - {name: box, depends: [start], queue: "{p}.box"}
      - {name: join, depends: [ship, box], queue: "{p}.join"}
  - name: fanned
    steps:
      - {name: fan, task: sq, when: "length(items) > `2`"}
      - {name: after, depends: [fan], queue: "{p}.after"}
    tasks:
      - name: sq
        itemListKey: items
        steps:
          - {name: square, queue: "{p}.square"}
"""
QUEUES = ["start", "ship", "box", "join", "after", "square"]


async def events_until_end(stream) -> list[dict]:
    """The run events of a stream until its top-level job ends."""
    events = []
    async for message in read_events(stream.aiter_lines()):
        body = json.loads(message.data)
        events.append(body)
        if body["type"].startswith("job.") and body["type"] != "job.started":
            if body.get("parent") is None:
                return events
    return events


async def test_a_skipped_branch_lets_the_join_run_with_the_other_branch_output(system):
    sys = await system(DIAMOND, step_queues=QUEUES)
    job_id = str(uuid.uuid4())
    async with sys.http.stream("GET", "/api/events", params={"job": job_id}) as stream:
        outcome = await sys.run("order", {"shipping_method": "pickup"}, job_id)
        events = await events_until_end(stream)
    assert outcome.status == "completed", outcome.body
    # join's input was box's output (ship's is {}); ship never reached a worker.
    assert outcome.body["path"] == ["start", "box", "join"]
    assert "seen_ship" not in outcome.body
    kinds = [(e["type"], e.get("step")) for e in events]
    assert ("step.skipped", "ship") in kinds
    assert ("step.dispatched", "ship") not in kinds
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    ship = next(step for step in page["steps"] if step["name"] == "ship")
    assert ship["status"] == "skipped"
    assert ship["attempts"] == 0 and ship["output"] == {}
    assert ship["when"] == "shipping_method != 'pickup'"
    legacy = (await sys.http.get(f"/api/job/{job_id}")).json()
    entry = next(e for e in legacy["completed"] if e["name"] == "ship")
    assert entry["skipped"] is True and entry["message"] == {}


async def test_a_true_condition_runs_the_branch(system):
    sys = await system(DIAMOND, step_queues=QUEUES)
    outcome = await sys.run("order", {"shipping_method": "post"})
    assert outcome.status == "completed", outcome.body
    assert outcome.body["seen_ship"] is True and outcome.body["seen_box"] is True


async def test_a_skipped_task_step_starts_no_child(system):
    sys = await system(DIAMOND, step_queues=QUEUES)
    job_id = str(uuid.uuid4())
    outcome = await sys.run("fanned", {"items": [1, 2]}, job_id)
    assert outcome.status == "completed", outcome.body
    assert outcome.body["path"] == ["after"]  # after got fan's empty output
    page = (await sys.http.get(f"/api/job/{job_id}/steps")).json()
    fan = next(step for step in page["steps"] if step["name"] == "fan")
    assert fan["status"] == "skipped" and "children" not in fan
    ran = await sys.run("fanned", {"items": [1, 2, 3]})
    assert ran.body["items"] == [1, 4, 9]


async def test_validate_rejects_an_expression_that_does_not_compile(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "workflows:\n  - name: w\n    steps:\n      - name: a\n"
        "      - name: ship\n        depends: [a]\n        when: \"method = 'x'\"\n"
    )
    code, out, err = await cli("validate", str(bad))
    assert code == 1
    assert "bad.yaml:7: workflow 'w', step 'ship': when: " in err
    assert "is not a JMESPath expression" in err
    assert "Traceback" not in out + err
