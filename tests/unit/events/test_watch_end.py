"""`workflow-manager watch` when a read of the job finds it ended while its last events are
still on their way: they are printed, in order, before the end. The API is played by an httpx
mock transport."""

from __future__ import annotations

import io

import httpx

from workflow_manager.events.sse import format_event
from workflow_manager.watch import watch_job

JOB = "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10"


def _event(number: int, kind: str, **fields: object) -> str:
    body = {"type": kind, "job": JOB, "at": 1.0, **fields}
    return format_event(kind, body, f"1-{number}")


class Api:
    """The stream holds two step events and the job's end; every read of the job after the
    first finds it completed already."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/events":
            stream = "".join([
                _event(1, "step.completed", step="a", attempt=1, status="completed"),
                _event(2, "step.completed", step="b", attempt=1, status="completed"),
                _event(3, "job.completed", status="completed"),
            ])  # fmt: skip
            return httpx.Response(
                200, content=stream.encode(), headers={"content-type": "text/event-stream"}
            )
        self.reads += 1
        status = "running" if self.reads == 1 else "completed"
        return httpx.Response(200, json={"uuid": JOB, "workflow": "wf", "status": status})


async def test_the_events_on_their_way_when_the_job_is_read_ended_are_printed_first() -> None:
    api, out = Api(), io.StringIO()
    # refresh_s=0: the job is read again after the first event, and is found completed.
    status = await watch_job("http://wm", JOB, out, refresh_s=0, transport=httpx.MockTransport(api))
    assert status == "completed"
    lines = out.getvalue().splitlines()
    steps = [line.split()[-3] for line in lines if "step.completed" in line]
    assert steps == ["a", "b"], out.getvalue()
    assert api.reads >= 2  # it did find the job ended by reading it
    assert lines[-2].endswith(" job.completed") and lines[-1] == f"job {JOB}  wf  completed"
