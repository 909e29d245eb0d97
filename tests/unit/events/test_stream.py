"""`GET /api/events` on the real orchestrator: types in order, resume, filters, bad input."""

from __future__ import annotations

import asyncio

from workflow_manager.events import parse_event_id

from .conftest import open_events


def _summary(messages):
    return [
        (m.event, m.json().get("step"), m.json().get("attempt"), m.json().get("status"))
        for m in messages
    ]


async def test_every_event_type_comes_in_order_for_a_retry_a_failure_and_a_cancel(rig, open_stream):
    stream = await open_stream()
    job = await rig.orchestrator.submit("flow", {"x": 1})
    await rig.answer(await rig.request("prep"), error="flaky")  # retried at once (backoff 0)
    await rig.answer(await rig.request("prep", 2), {"p": 1})
    await rig.answer(await rig.request("work"), error="broken")
    other = await rig.orchestrator.submit("flow", {})
    await rig.orchestrator.cancel(other)

    messages = await stream.take(11)
    assert _summary(messages[:8]) == [
        ("job.started", None, None, "running"),
        ("step.dispatched", "prep", 1, "running"),
        ("step.retrying", "prep", 1, "retrying"),
        ("step.dispatched", "prep", 2, "running"),
        ("step.completed", "prep", 2, "completed"),
        ("step.dispatched", "work", 1, "running"),
        ("step.failed", "work", 1, "failed"),
        ("job.failed", None, None, "failed"),
    ]
    assert _summary(messages[8:]) == [
        ("job.started", None, None, "running"),
        ("step.dispatched", "prep", 1, "running"),
        ("job.cancelled", None, None, "cancelled"),
    ]
    bodies = [m.json() for m in messages]
    assert all(b["type"] == m.event for b, m in zip(bodies, messages, strict=True))
    assert {b["job"] for b in bodies[:8]} == {job} and {b["job"] for b in bodies[8:]} == {other}
    assert all(b["root"] == b["job"] and b["workflow"] == "flow" for b in bodies)
    assert bodies[2]["reason"] == "error" and bodies[6]["reason"] == "error"
    seqs = [parse_event_id(m.id)[1] for m in messages]
    assert seqs == list(range(seqs[0], seqs[0] + 11))  # one id each, counting up


async def test_a_reconnect_with_last_event_id_misses_nothing(rig, open_stream):
    whole = await open_stream()  # never disconnects: what the resumed client must match
    stream = await open_stream()
    await rig.orchestrator.submit("flow", {})
    seen = await stream.take(2)  # job.started, step.dispatched prep
    await stream.close()

    await rig.answer(await rig.request("prep"), {"p": 1})  # while the client is away
    await rig.answer(await rig.request("work"), {"w": 1})

    resumed = await open_stream(last_id=seen[-1].id)
    rest = await resumed.take(4)
    expected = await whole.take(6)
    assert [(m.id, m.data) for m in seen + rest] == [(m.id, m.data) for m in expected]
    assert rest[-1].event == "job.completed"


async def test_a_resume_from_an_event_no_longer_kept_is_a_reset(rig_factory):
    rig = await rig_factory(capacity=2)
    first = await open_events(rig.http)
    await rig.orchestrator.submit("flow", {})
    await rig.answer(await rig.request("prep"), {})  # 4 events so far: the ring keeps 2
    oldest = (await first.take(1))[0]
    await first.close()

    again = await open_events(rig.http, last_id=oldest.id)
    reset = await again.next()
    assert reset.event == "reset" and "no longer kept" in reset.json()["reason"]
    assert reset.id == rig.hub.latest_id  # a later resume starts from here
    await rig.answer(await rig.request("work"), {})
    assert [m.event for m in await again.take(2)] == ["step.completed", "job.completed"]
    await again.close()

    restarted = await open_events(rig.http, last_id="1-1")  # another manager process's id
    message = await restarted.next()
    assert message.event == "reset" and "restarted" in message.json()["reason"]
    await restarted.close()


async def test_a_resume_from_the_latest_event_gets_only_new_ones(rig, open_stream):
    await rig.orchestrator.submit("flow", {})
    await rig.request("prep")
    stream = await open_stream(last_id=rig.hub.latest_id)
    await rig.answer(await rig.request("prep"), {})
    assert (await stream.next()).event == "step.completed"


async def test_job_filter_follows_children_and_workflow_filter_leaves_others_out(rig, open_stream):
    fan = await rig.orchestrator.submit("fan", {"items": [1, 2]})
    by_job = await open_stream({"job": fan.upper()})  # any letter case
    by_workflow = await open_stream({"workflow": "flow"})
    flow = await rig.orchestrator.submit("flow", {})
    for count in (1, 2):
        await rig.answer(await rig.request("job", count), {"n": count})
    await rig.answer(await rig.request("prep"), {})

    fan_events = [m.json() for m in await by_job.take(5)]
    assert [(e["type"], e["job"] == fan) for e in fan_events] == [
        ("step.completed", False),
        ("job.completed", False),
        ("step.completed", False),
        ("job.completed", False),
        ("step.completed", True),  # the task step, once both children are done
    ]
    assert all(e["root"] == fan and e["workflow"] == "fan" for e in fan_events)
    assert fan_events[1]["parent"] == fan
    assert (await by_job.next()).json()["type"] == "job.completed"
    flow_events = [m.json() for m in await by_workflow.take(3)]
    assert [e["type"] for e in flow_events] == ["job.started", "step.dispatched", "step.completed"]
    assert {e["job"] for e in flow_events} == {flow}


async def test_bad_filters_and_ids_answer_400_or_404_naming_them(rig):
    cases = [
        ({"job": "nope"}, {}, 400, "query parameter 'job' 'nope' is not a UUID"),
        ({"workflow": "flwo"}, {}, 404, "did you mean 'flow'"),
        ({}, {"Last-Event-ID": "yesterday"}, 400, "header 'Last-Event-ID' 'yesterday'"),
    ]
    for params, headers, status, text in cases:
        response = await rig.http.get("/api/events", params=params, headers=headers)
        assert response.status_code == status
        assert text in response.json()["error"]
    assert rig.hub.subscribers == 0


async def test_an_idle_stream_gets_heartbeats(rig_factory):
    rig = await rig_factory(heartbeat_s=0.05)
    async with rig.http.stream("GET", "/api/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.aiter_lines()
        assert await anext(lines) == ": connected"
        assert [await anext(lines) for _ in range(3)] == ["", ": keepalive", ""]
    assert rig.hub.subscribers == 0


async def _run_flow(rig, number: int) -> None:
    """Run the `number`-th flow job to completion: 6 events, 2 at a time."""
    await rig.orchestrator.submit("flow", {})
    await rig.answer(await rig.request("prep", number), {})
    await rig.answer(await rig.request("work", number), {})


async def test_a_slow_client_is_told_and_dropped_then_resumes_without_a_gap(rig_factory):
    # Its transport holds one chunk at most: a client that reads nothing blocks the stream.
    rig = await rig_factory(max_chunks=1, queue_limit=5)
    whole = await open_events(rig.http)  # reads as the events come, for comparison
    reading = asyncio.create_task(whole.take(12))
    slow = await open_events(rig.http)
    for number in (1, 2):
        await _run_flow(rig, number)
    expected = [m.id for m in await reading]

    received = []
    while (message := await slow.next()).event != "overflow":
        received.append(message.id)
    assert "fell 5 events behind" in message.json()["reason"]
    assert 0 < len(received) < len(expected)
    await slow.close()
    assert rig.hub.subscribers == 1  # only `whole`: the slow one is gone

    resumed = await open_events(rig.http, last_id=received[-1])
    rest = [m.id for m in await resumed.take(len(expected) - len(received))]
    assert received + rest == expected
    await resumed.close()
    await whole.close()


async def test_the_openapi_document_describes_the_stream(rig):
    operation = (await rig.http.get("/openapi.json")).json()["paths"]["/api/events"]["get"]
    params = {p["name"]: p for p in operation["parameters"]}
    assert params["job"]["schema"]["format"] == "uuid"
    assert "null" not in str(params["job"]["schema"])  # a client may not send `job=null`
    assert params["Last-Event-ID"]["in"] == "header"
    message = operation["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert "job.completed" in message["properties"]["event"]["enum"]
    assert "reset" in message["properties"]["event"]["enum"]
